package modelproxy

import "bytes"

// redacted is what the key becomes wherever a provider echoes it.
var redacted = []byte("[redacted]")

// keyScrubber takes the key out of a stream that may split it across any
// number of reads: each chunk is joined to what was held back from the one
// before, the key replaced, and the longest tail that could still begin
// the key (never more than len(key)-1 bytes) is held back for the next.
// Holding back only a possible beginning, not always len(key)-1 bytes,
// keeps a stream's events flowing as they come.
type keyScrubber struct {
	key  []byte
	held []byte
}

func newKeyScrubber(key string) *keyScrubber { return &keyScrubber{key: []byte(key)} }

// next is what of chunk may be written now.
func (s *keyScrubber) next(chunk []byte) []byte {
	if len(s.key) == 0 {
		return chunk
	}
	buf := bytes.ReplaceAll(append(s.held, chunk...), s.key, redacted)
	keep := 0
	for n := min(len(buf), len(s.key)-1); n > 0; n-- {
		if bytes.HasPrefix(s.key, buf[len(buf)-n:]) {
			keep = n
			break
		}
	}
	s.held = append([]byte(nil), buf[len(buf)-keep:]...)
	return buf[:len(buf)-keep]
}

// rest is what was held back, at the stream's end: too short to be the key.
func (s *keyScrubber) rest() []byte {
	r := s.held
	s.held = nil
	return r
}

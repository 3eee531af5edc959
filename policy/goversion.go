package policy

import "strings"

// canonicalGoVersion reports whether v, as a GOPROXY path carries it
// (capitals escaped as '!' and the lower-case letter), is a canonical
// module version: vMAJOR.MINOR.PATCH, an optional pre-release, and no build
// suffix but "+incompatible" (go.dev/ref/mod, "Versions"). Releases and
// pseudo-versions are; v1.2 or a branch named v2-dev are not: those are
// queries, whose answer may move.
func canonicalGoVersion(v string) bool {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return false
	}
	rest = strings.TrimSuffix(rest, "+incompatible")
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !allDigits(p) || (len(p) > 1 && p[0] == '0') {
			return false
		}
	}
	if !hasPre {
		return true
	}
	for _, id := range strings.Split(pre, ".") {
		if !preReleaseIdentifier(id) {
			return false
		}
	}
	return true
}

// preReleaseIdentifier is one dot-separated part of a pre-release:
// letters, digits and hyphens (a capital escaped), and a number without a
// leading zero.
func preReleaseIdentifier(id string) bool {
	if id == "" {
		return false
	}
	if allDigits(id) {
		return len(id) == 1 || id[0] != '0'
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case c == '!' && i+1 < len(id) && id[i+1] >= 'a' && id[i+1] <= 'z':
			i++
		default:
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

package fakegoproxy

import (
	"context"
	"fmt"
	"io/fs"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// checksumDB is the checksum database's storage, for sumdb.Server: a
// transparent log built once, in New, of one record per served module
// version (its two go.sum lines, from the honest zip and go.mod), signed
// by a key made for this proxy. It never changes afterwards, so it needs
// no lock.
type checksumDB struct {
	records [][]byte
	ids     map[module.Version]int64
	hashes  storedHashes
	signed  []byte
}

// newChecksumDB logs the modules in order and signs the tree.
func newChecksumDB(mods []*servedModule, signerKey string) (*checksumDB, error) {
	db := &checksumDB{ids: make(map[module.Version]int64, len(mods))}
	for _, m := range mods {
		id := int64(len(db.records))
		record := m.goSum()
		hashes, err := tlog.StoredHashes(id, record, db.hashes)
		if err != nil {
			return nil, fmt.Errorf("logging %s: %w", m, err)
		}
		db.hashes = append(db.hashes, hashes...)
		db.records = append(db.records, record)
		db.ids[module.Version{Path: m.Path, Version: m.Version}] = id
	}
	n := int64(len(db.records))
	root, err := tlog.TreeHash(n, db.hashes)
	if err != nil {
		return nil, fmt.Errorf("hashing the tree: %w", err)
	}
	signer, err := note.NewSigner(signerKey)
	if err != nil {
		return nil, err
	}
	db.signed, err = note.Sign(&note.Note{Text: string(tlog.FormatTree(tlog.Tree{N: n, Hash: root}))}, signer)
	if err != nil {
		return nil, fmt.Errorf("signing the tree: %w", err)
	}
	return db, nil
}

// notExist is an error sumdb.Server answers 404 for: it tests with
// os.IsNotExist, which unwraps a *fs.PathError but not %w.
func notExist(op, what string) error {
	return &fs.PathError{Op: op, Path: what, Err: fs.ErrNotExist}
}

func (db *checksumDB) Signed(context.Context) ([]byte, error) { return db.signed, nil }

func (db *checksumDB) ReadRecords(_ context.Context, id, n int64) ([][]byte, error) {
	if id < 0 || n < 0 || id+n > int64(len(db.records)) {
		return nil, notExist("read records", fmt.Sprintf("%d+%d", id, n))
	}
	return db.records[id : id+n], nil
}

func (db *checksumDB) Lookup(_ context.Context, m module.Version) (int64, error) {
	id, ok := db.ids[m]
	if !ok {
		return 0, notExist("lookup", m.String())
	}
	return id, nil
}

func (db *checksumDB) ReadTileData(_ context.Context, t tlog.Tile) ([]byte, error) {
	return tlog.ReadTileData(t, db.hashes)
}

// storedHashes is the log's stored hashes, by index, as a tlog.HashReader
// that refuses indexes past the tree (a tile the client asks for beyond
// it) instead of panicking.
type storedHashes []tlog.Hash

func (h storedHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, 0, len(indexes))
	for _, i := range indexes {
		if i < 0 || i >= int64(len(h)) {
			return nil, notExist("read hash", fmt.Sprint(i))
		}
		out = append(out, h[i])
	}
	return out, nil
}

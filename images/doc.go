// Package images builds, stores, resolves and garbage-collects snapshot
// images: a repository's environment prepared before anyone asks for it, so
// that a session starts from a warm checkout instead of a cold clone and a
// dependency download. It uses go-containerregistry and needs no Docker
// daemon.
//
// A snapshot image is an OCI image whose layers are, in order:
//
//  1. the base (toolchain) image's layers, unchanged;
//  2. one layer per dependency cache (for example the Go module cache at
//     /cache/go/mod, or /workspace/node_modules), each annotated with its
//     path in the image and a key hashed from the repository's lockfiles
//     (see LockfileKey);
//  3. one workspace layer holding the repository checkout at /workspace.
//
// Caches come before the workspace because they change far less often: when
// a rebuild's lockfiles are unchanged, Assemble reuses the previous
// snapshot's cache layer as it is (same digest, not tarred again), so a push
// uploads no blob for it and a one-file source change costs one workspace
// layer, a config and a manifest.
//
// The image config carries labels (LabelRepo, LabelSHA, LabelBuilt,
// LabelVersion, LabelCaches) from which Describe recovers a Snapshot without
// reading any layer. A Store keeps snapshots under two tags per repository:
// the commit SHA, and "latest". RegistryStore talks to an OCI registry;
// LayoutStore keeps everything in one OCI image layout on disk, for
// installations without a registry.
//
// Layers are built deterministically (DirLayer): the same tree gives the
// same digest whatever its files' mtimes and owners, in any process. The
// workspace layer leaves out git's volatile files, the index among them
// (see WorkspaceExclude), so whoever unpacks a workspace rebuilds the index
// from HEAD (for example `git reset -q`) before using it.
//
// ExtractLayer unpacks a layer once into a content-addressed directory,
// refusing entries that would escape it.
package images

// Package images will build, push, resolve and garbage-collect snapshot
// images with go-containerregistry, without a Docker daemon. Issue 5 builds
// it.
package images

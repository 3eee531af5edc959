package fakenpm

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// abbreviatedFields are the version fields the abbreviated packument
// keeps: those package-metadata.md lists, and the few more the registry
// sends and npm reads when installing (deprecated, os, cpu,
// peerDependenciesMeta, hasInstallScript).
var abbreviatedFields = []string{
	"name", "version", "deprecated", "dependencies", "optionalDependencies", "devDependencies",
	"bundleDependencies", "peerDependencies", "peerDependenciesMeta", "bin", "directories",
	"dist", "engines", "_hasShrinkwrap", "hasInstallScript", "os", "cpu",
}

// hoistedFields are copied from the latest version to the top of the full
// packument.
var hoistedFields = []string{
	"author", "bugs", "contributors", "description", "homepage", "keywords", "license", "maintainers", "repository",
}

// tarballFile is the file name of a version's tarball: the name without
// its scope, then the version.
func tarballFile(name, ver string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name + "-" + ver + ".tgz"
}

// tarballURL is where dist.tarball points: /<name>/-/<file> under base,
// with a scoped name unescaped, as the registry writes it.
func tarballURL(base, name, ver string) string {
	return base + "/" + name + "/-/" + tarballFile(name, ver)
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fullVersion is one version's object in the full packument and the
// version endpoint: its package.json and what the registry adds. Callers
// hold the registry's lock.
func (p *pkg) fullVersion(base, ver string, v *version) map[string]any {
	doc := maps.Clone(v.manifest)
	doc["_id"] = p.name + "@" + ver
	if _, ok := doc["_hasShrinkwrap"]; !ok {
		_, doc["_hasShrinkwrap"] = v.files["npm-shrinkwrap.json"]
	}
	if scripts, ok := doc["scripts"].(map[string]any); ok {
		for _, s := range []string{"preinstall", "install", "postinstall"} {
			if _, ok := scripts[s]; ok {
				doc["hasInstallScript"] = true
			}
		}
	}
	unpacked := 0
	for _, body := range v.files {
		unpacked += len(body)
	}
	doc["dist"] = map[string]any{
		"tarball":      tarballURL(base, p.name, ver),
		"integrity":    v.tarball.Integrity,
		"shasum":       v.tarball.Shasum,
		"fileCount":    len(v.files),
		"unpackedSize": unpacked,
	}
	return doc
}

// full is the full packument. Callers hold the registry's lock.
func (p *pkg) full(base string) map[string]any {
	versions := map[string]any{}
	times := map[string]any{"created": isoTime(p.created), "modified": isoTime(p.modified)}
	for ver, v := range p.versions {
		versions[ver] = p.fullVersion(base, ver, v)
		times[ver] = isoTime(v.published)
	}
	doc := map[string]any{
		"_id":          p.name,
		"_rev":         fmt.Sprintf("%d-%032x", p.rev, p.modified.UnixNano()),
		"name":         p.name,
		"dist-tags":    maps.Clone(p.distTags),
		"versions":     versions,
		"time":         times,
		"_attachments": map[string]any{},
	}
	if latest := p.versions[p.distTags["latest"]]; latest != nil {
		for _, f := range hoistedFields {
			if val, ok := latest.manifest[f]; ok {
				doc[f] = val
			}
		}
		if readme, ok := latest.files["README.md"]; ok {
			doc["readme"], doc["readmeFilename"] = readme, "README.md"
		}
	}
	return doc
}

// abbreviated is the abbreviated packument npm install asks for. Callers
// hold the registry's lock.
func (p *pkg) abbreviated(base string) map[string]any {
	versions := map[string]any{}
	for ver, v := range p.versions {
		full := p.fullVersion(base, ver, v)
		short := map[string]any{}
		for _, f := range abbreviatedFields {
			if val, ok := full[f]; ok {
				short[f] = val
			}
		}
		versions[ver] = short
	}
	return map[string]any{
		"name":      p.name,
		"modified":  isoTime(p.modified),
		"dist-tags": maps.Clone(p.distTags),
		"versions":  versions,
	}
}

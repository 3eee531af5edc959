// Package dockerfile is a small Dockerfile parser, enough for the checks
// internal/dockerfile's tests make on the repository's Dockerfile: stages,
// their FROM, and their instructions with line continuations joined. It
// follows the Dockerfile reference: parser directives only at the very top,
// '#' comments only at the start of a line, '\' continuing a line (comment
// lines inside a continuation are dropped), instructions case-insensitive.
// It does not expand variables or parse heredocs (it refuses them), which
// is why a maintained parser (moby/buildkit's) was not worth its module graph
// here: decision 0035.
package dockerfile

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// Instruction is one instruction: its keyword upper-cased, the rest of the
// line(s) as written (continuations joined with a space), and the line it
// starts on.
type Instruction struct {
	Cmd  string
	Args string
	Line int
}

// Stage is a FROM and what follows it up to the next FROM.
type Stage struct {
	Image    string // the FROM's image, with tag and digest as written
	Name     string // AS name, lower-cased; "" when unnamed
	Platform string // --platform, if any
	Line     int
	Body     []Instruction
}

// File is a parsed Dockerfile.
type File struct {
	Directives map[string]string // "syntax", "escape", ...
	Stages     []Stage
}

var directiveRE = regexp.MustCompile(`^#\s*([a-zA-Z]+)\s*=\s*(.+?)\s*$`)

// Parse parses a Dockerfile.
func Parse(src string) (File, error) {
	f := File{Directives: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lineNo := 0
	directives := true
	var cur *Instruction
	var text strings.Builder
	flush := func() error {
		if cur == nil {
			return nil
		}
		cur.Args = strings.TrimSpace(text.String())
		text.Reset()
		in := *cur
		cur = nil
		if in.Cmd == "FROM" {
			st, err := parseFrom(in)
			if err != nil {
				return err
			}
			f.Stages = append(f.Stages, st)
			return nil
		}
		if len(f.Stages) == 0 {
			if in.Cmd == "ARG" {
				return nil // an ARG before the first FROM
			}
			return fmt.Errorf("line %d: %s before the first FROM", in.Line, in.Cmd)
		}
		last := &f.Stages[len(f.Stages)-1]
		last.Body = append(last.Body, in)
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if directives {
			if m := directiveRE.FindStringSubmatch(trimmed); m != nil {
				f.Directives[strings.ToLower(m[1])] = m[2]
				continue
			}
			directives = false
		}
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == nil) {
			continue // a comment, also inside a continuation; a blank line
		}
		if cur == nil {
			cmd, rest, _ := strings.Cut(trimmed, " ")
			cur = &Instruction{Cmd: strings.ToUpper(cmd), Line: lineNo}
			trimmed = rest
			if strings.Contains(rest, "<<") && (cur.Cmd == "RUN" || cur.Cmd == "COPY") {
				return File{}, fmt.Errorf("line %d: heredocs are not supported", lineNo)
			}
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			text.WriteString(strings.TrimSpace(body) + " ")
			continue
		}
		text.WriteString(trimmed)
		if err := flush(); err != nil {
			return File{}, err
		}
	}
	if err := sc.Err(); err != nil {
		return File{}, err
	}
	if cur != nil {
		return File{}, fmt.Errorf("line %d: the last instruction ends in a line continuation", cur.Line)
	}
	if len(f.Stages) == 0 {
		return File{}, fmt.Errorf("no FROM")
	}
	return f, nil
}

func parseFrom(in Instruction) (Stage, error) {
	st := Stage{Line: in.Line}
	fields := strings.Fields(in.Args)
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		if p, ok := strings.CutPrefix(fields[0], "--platform="); ok {
			st.Platform = p
		} else {
			return Stage{}, fmt.Errorf("line %d: FROM flag %s is not supported", in.Line, fields[0])
		}
		fields = fields[1:]
	}
	switch {
	case len(fields) == 1:
	case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
		st.Name = strings.ToLower(fields[2])
	default:
		return Stage{}, fmt.Errorf("line %d: FROM %q: want IMAGE [AS NAME]", in.Line, in.Args)
	}
	st.Image = fields[0]
	return st, nil
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// Pinned reports whether a stage's image is pinned: by a sha256 digest, or
// scratch, or an earlier stage (by name or index) of the same file.
func (f File) Pinned(i int) bool {
	img := f.Stages[i].Image
	if img == "scratch" || digestRE.MatchString(img) {
		return true
	}
	for j := range i {
		if f.Stages[j].Name != "" && strings.EqualFold(img, f.Stages[j].Name) || img == fmt.Sprint(j) {
			return true
		}
	}
	return false
}

// Stage returns the stage named name.
func (f File) Stage(name string) (Stage, bool) {
	for _, s := range f.Stages {
		if s.Name == strings.ToLower(name) {
			return s, true
		}
	}
	return Stage{}, false
}

// Last returns the stage's last instruction cmd, if any.
func (s Stage) Last(cmd string) (Instruction, bool) {
	for i := len(s.Body) - 1; i >= 0; i-- {
		if s.Body[i].Cmd == cmd {
			return s.Body[i], true
		}
	}
	return Instruction{}, false
}

// NonRoot reports whether a USER value names neither root nor uid 0.
func NonRoot(user string) bool {
	u, _, _ := strings.Cut(strings.TrimSpace(user), ":")
	return u != "" && u != "root" && u != "0" && strings.TrimLeft(u, "0") != ""
}

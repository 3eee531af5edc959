package render

import (
	"fmt"
	"html"
	"strings"
)

// ScreenshotLink is one screenshot pair as the PR body lists it
// (decision 0083): the command and path (untrusted text), the session
// page's anchor of the pair, which sides have an image, and each side's
// thumbnail URL, set only for a public repository whose server serves
// them (web.public_screenshot_thumbnails).
type ScreenshotLink struct {
	Command, Name string
	// URL is the pair on the session's page (PAGE#ANCHOR): behind the
	// dashboard's sign-in.
	URL                string
	HasBase, HasChange bool
	// BaseThumb and ChangeThumb are content-addressed image URLs served
	// without sign-in; "" for a private repository, always.
	BaseThumb, ChangeThumb string
}

// ScreenshotsSection is the PR body's screenshots: one line listing each
// pair as a link to its place on the session's page, and, where a pair
// has thumbnails, the small images, each linking there too. Nothing of a
// private repository's images is in it: the page's sign-in guards them.
// "" when there are none.
func ScreenshotsSection(list []ScreenshotLink) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n**Screenshots** (base and change side by side on the session's page): ")
	for i, l := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		sides := "base and change"
		switch {
		case !l.HasBase:
			sides = "change only"
		case !l.HasChange:
			sides = "base only"
		}
		fmt.Fprintf(&b, "[%s: %s](%s) (%s)", untrustedSpan(l.Command), pathSpan(l.Name), l.URL, sides)
	}
	b.WriteString("\n")
	for _, l := range list {
		if l.BaseThumb == "" && l.ChangeThumb == "" {
			continue
		}
		b.WriteString("\n")
		for _, side := range []struct{ alt, src string }{{"base", l.BaseThumb}, {"change", l.ChangeThumb}} {
			if side.src != "" {
				fmt.Fprintf(&b, `<a href="%s"><img src="%s" alt="%s" width="240"></a> `, html.EscapeString(l.URL), html.EscapeString(side.src), side.alt)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

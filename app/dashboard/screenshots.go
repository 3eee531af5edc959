package dashboard

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/app/store"
)

// ScreenshotLinks are the session's screenshot pairs for its PR body
// (decision 0083), each a link to its place on the session's page; none
// without a dashboard. With web.public_screenshot_thumbnails, and only
// for a repository GitHub says is public (asked now: a failure counts as
// private), each image is published at its digest and given a thumbnail
// URL served without sign-in.
func (d *Dashboard) ScreenshotLinks(ctx context.Context, sess store.Session) []render.ScreenshotLink {
	srv, err := d.Server()
	if srv == nil || err != nil || sess.AttemptID == "" {
		return nil
	}
	log := zerolog.Ctx(ctx)
	a, err := d.o.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil {
		log.Warn().Err(err).Msg("reading the attempt for its screenshots failed; the PR lists none")
		return nil
	}
	pairs, err := screenshots.Pairs(ctx, d.o.Store, a, sess.RepoID)
	if err != nil || len(pairs) == 0 {
		if err != nil {
			log.Warn().Err(err).Msg("reading the screenshots failed; the PR lists none")
		}
		return nil
	}
	public := d.o.Config.Web.PublicScreenshotThumbnails && d.publicRepo(ctx, sess)
	page := srv.SessionURL(sess.ID)
	out := make([]render.ScreenshotLink, 0, len(pairs))
	for _, p := range pairs {
		l := render.ScreenshotLink{Command: p.Command, Name: p.Name, URL: page + "#" + p.Anchor, HasBase: p.Base != nil, HasChange: p.Change != nil}
		if public {
			l.BaseThumb, l.ChangeThumb = d.publish(ctx, p.Base), d.publish(ctx, p.Change)
		}
		out = append(out, l)
	}
	return out
}

// publish makes shot servable at its digest and is its URL there; "" for
// none, or when it could not be published.
func (d *Dashboard) publish(ctx context.Context, shot *screenshots.Shot) string {
	ext := ""
	if shot != nil {
		ext = screenshots.Extension(shot.ContentType)
	}
	if ext == "" || len(shot.SHA256) != 64 {
		return ""
	}
	if err := d.o.Store.PublishScreenshot(ctx, shot.SHA256, shot.AttemptID, shot.Name, d.o.Now()); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("attempt_id", shot.AttemptID).Msg("publishing a screenshot failed; the PR shows no thumbnail of it")
		return ""
	}
	return d.o.Config.Web.PublicURL + "/screenshots/sha256-" + shot.SHA256 + ext
}

// publicRepo says GitHub calls the session's repository public, asked
// with the installation's token; anything else, an error included, is
// private.
func (d *Dashboard) publicRepo(ctx context.Context, sess store.Session) bool {
	if d.o.Installation == nil {
		return false
	}
	c, err := d.o.Installation(ctx, sess.InstallationID)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("no installation client to ask the repository's visibility; no thumbnails")
		return false
	}
	r, _, err := c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("asking the repository's visibility failed; no thumbnails")
		return false
	}
	return !r.GetPrivate() && r.GetVisibility() == "public"
}

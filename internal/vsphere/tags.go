package vsphere

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/types"
)

// attachTags attaches vSphere tags to a VM. Tags are named "tag", "category/tag" or by URN; name-to-ID
// lookups are cached per session. The REST session is opened on first use and renewed once on 401.
func (c *client) attachTags(ctx context.Context, ref types.ManagedObjectReference, names []string) error {
	if len(names) == 0 {
		return nil
	}
	err := c.withREST(ctx, func(m *tags.Manager) error {
		ids := make([]string, 0, len(names))
		for _, n := range names {
			id, err := c.tagID(ctx, m, n)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return m.AttachMultipleTagsToObject(ctx, ids, ref)
	})
	return classify("AttachTags", err)
}

func (c *client) tagID(ctx context.Context, m *tags.Manager, name string) (string, error) {
	if strings.HasPrefix(name, "urn:") {
		return name, nil
	}
	c.restMu.Lock()
	id, ok := c.tagIDs[name]
	c.restMu.Unlock()
	if ok {
		return id, nil
	}
	var t *tags.Tag
	var err error
	if cat, tag, found := strings.Cut(name, "/"); found {
		t, err = m.GetTagForCategory(ctx, tag, cat)
	} else {
		t, err = m.GetTag(ctx, name)
	}
	if err != nil {
		if rest.IsStatusError(err, http.StatusNotFound) || strings.Contains(err.Error(), "not found") {
			return "", NewError(ClassInvalid, "AttachTags", "tag %q not found", name)
		}
		return "", err
	}
	c.restMu.Lock()
	c.tagIDs[name] = t.ID
	c.restMu.Unlock()
	return t.ID, nil
}

// withREST runs fn with a logged-in REST (vAPI) client, logging in again once when the session expired.
func (c *client) withREST(ctx context.Context, fn func(*tags.Manager) error) error {
	rc, err := c.restClient(ctx, false)
	if err != nil {
		return err
	}
	err = fn(tags.NewManager(rc))
	if rest.IsStatusError(err, http.StatusUnauthorized) {
		if rc, err = c.restClient(ctx, true); err != nil {
			return err
		}
		err = fn(tags.NewManager(rc))
	}
	return err
}

func (c *client) restClient(ctx context.Context, renew bool) (*rest.Client, error) {
	c.restMu.Lock()
	defer c.restMu.Unlock()
	if c.rest != nil && !renew {
		return c.rest, nil
	}
	rc := rest.NewClient(c.vim)
	c.guardServiceClient(rc.Client)
	ctx, cancel := c.bounded(ctx)
	defer cancel()
	if err := rc.Login(ctx, url.UserPassword(c.creds.Username, c.creds.Password)); err != nil {
		return nil, classify("Login", err)
	}
	c.rest = rc
	return rc, nil
}

package vsphere

// Added by the ISO cache (internal/iso) owner: the cache uploads to a temporary name and can only
// name the file after its SHA-256 is known, so it needs a plain datastore move. Kept in its own file
// so the vSphere client owner can fold it in (or into the Client interface) as they see fit.

import (
	"context"

	"github.com/vmware/govmomi/object"
)

// MoveFile moves (renames) a datastore file within one datacenter, overwriting dstPath if it exists.
// Paths are "[datastore] dir/file". The destination folder must exist.
func (c *client) MoveFile(ctx context.Context, datacenter, srcPath, dstPath string) error {
	err := func() error {
		if _, err := parseDatastorePath("MoveFile", srcPath); err != nil {
			return err
		}
		if _, err := parseDatastorePath("MoveFile", dstPath); err != nil {
			return err
		}
		d, err := c.datacenter(ctx, datacenter)
		if err != nil {
			return err
		}
		t, err := object.NewFileManager(c.vim).MoveDatastoreFile(ctx, srcPath, d.dc, dstPath, d.dc, true)
		if err == nil {
			_, err = c.waitTask(ctx, t.Reference())
		}
		return classify("MoveDatastoreFile", err)
	}()
	return observe("move-file", err)
}

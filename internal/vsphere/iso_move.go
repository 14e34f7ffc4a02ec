package vsphere

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
		return c.moveFile(ctx, d, srcPath, dstPath)
	}()
	return observe("move-file", err)
}

// moveFile runs one MoveDatastoreFile task (force: an existing destination is replaced).
func (c *client) moveFile(ctx context.Context, d *dcCache, srcPath, dstPath string) error {
	t, err := object.NewFileManager(c.vim).MoveDatastoreFile(ctx, srcPath, d.dc, dstPath, d.dc, true)
	if err == nil {
		_, err = c.waitTask(ctx, t.Reference())
	}
	return classify("MoveDatastoreFile", err)
}

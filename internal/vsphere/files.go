package vsphere

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// TempUploadMarker is part of the name of an upload in progress ("<name>.upload-<random>.tmp"), so a
// cache can recognise (and prune) leftovers of a crashed upload.
const TempUploadMarker = ".upload-"

// IsTempUploadName reports whether a file name is an upload in progress or a crashed one's leftover.
func IsTempUploadName(name string) bool {
	return strings.Contains(name, TempUploadMarker) && strings.HasSuffix(name, ".tmp")
}

// parseDatastorePath splits "[ds] dir/file" and refuses anything else.
func parseDatastorePath(op, p string) (object.DatastorePath, error) {
	var dp object.DatastorePath
	if !dp.FromString(p) || dp.Datastore == "" {
		return dp, NewError(ClassInvalid, op, "%q is not a datastore path \"[datastore] dir/file\"", p)
	}
	return dp, nil
}

// UploadISO streams r to a temporary name in the final folder, then renames it; the final name never
// holds a partial file. A failed upload removes its temporary file (best effort).
func (c *client) UploadISO(ctx context.Context, datacenter, finalPath string, r io.Reader, size int64) error {
	return observe("upload", c.uploadISO(ctx, datacenter, finalPath, r, size))
}

func (c *client) uploadISO(ctx context.Context, datacenter, finalPath string, r io.Reader, size int64) error {
	final, err := parseDatastorePath("UploadISO", finalPath)
	if err != nil {
		return err
	}
	tmp := final
	tmp.Path = path.Join(path.Dir(final.Path), path.Base(final.Path)+TempUploadMarker+randomHex(6)+".tmp")
	d, err := c.uploadFile(ctx, datacenter, tmp, r, size)
	if err != nil {
		return err
	}
	if err := c.moveFile(ctx, d, tmp.String(), final.String()); err != nil {
		c.removeQuietly(ctx, d, tmp.String())
		return err
	}
	c.log.Info("uploaded ISO", "path", final.String())
	return nil
}

// UploadFile streams r to exactly p: no temporary name, no move. A failed upload deletes what it
// wrote (best effort).
func (c *client) UploadFile(ctx context.Context, datacenter, p string, r io.Reader, size int64) error {
	err := func() error {
		dp, err := parseDatastorePath("UploadFile", p)
		if err != nil {
			return err
		}
		_, err = c.uploadFile(ctx, datacenter, dp, r, size)
		return err
	}()
	return observe("upload", err)
}

// uploadFile creates dst's folder and streams r into dst through the datastore HTTP endpoint.
func (c *client) uploadFile(ctx context.Context, datacenter string, dst object.DatastorePath, r io.Reader, size int64) (*dcCache, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, err
	}
	ds, err := d.datastore(ctx, dst.Datastore)
	if err != nil {
		return nil, err
	}
	if dir := path.Dir(dst.Path); dir != "." && dir != "/" {
		err := object.NewFileManager(c.vim).MakeDirectory(ctx, ds.Path(dir), d.dc, true)
		if err != nil && !isFault(err, &types.FileAlreadyExists{}) {
			return nil, classify("MakeDirectory", err)
		}
	}
	if size < 0 {
		size = -1 // chunked
	}
	start := time.Now()
	param := soap.DefaultUpload
	param.ContentLength = size
	uctx, cancel := withDefaultDeadline(ctx, c.timeouts.UploadTimeout)
	err = ds.Upload(uctx, r, dst.Path, &param)
	cancel()
	metrics.VsphereCallDuration.WithLabelValues("DatastoreUpload").Observe(time.Since(start).Seconds())
	if err != nil {
		c.removeQuietly(ctx, d, dst.String())
		if strings.HasPrefix(err.Error(), "401") {
			c.renewSession(ctx) // the HTTP file endpoint does not renew sessions itself
		}
		return nil, classify("UploadISO", err)
	}
	return d, nil
}

// removeQuietly deletes a file after a failure, with a background context (the caller's context
// may be the reason it failed).
func (c *client) removeQuietly(ctx context.Context, d *dcCache, p string) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = c.deleteFile(cleanup, d, p)
}

// renewSession logs in again now (used when a non-SOAP endpoint reports an expired session).
func (c *client) renewSession(ctx context.Context) {
	c.relogin.mu.Lock()
	seen := c.relogin.generation
	c.relogin.mu.Unlock()
	_ = c.relogin.renew(ctx, seen)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StatFile returns one datastore file, or a NotFound error.
func (c *client) StatFile(ctx context.Context, datacenter, p string) (*FileInfo, error) {
	fi, err := c.statFile(ctx, datacenter, p)
	return fi, observe("stat", err)
}

func (c *client) statFile(ctx context.Context, datacenter, p string) (*FileInfo, error) {
	dp, err := parseDatastorePath("StatFile", p)
	if err != nil {
		return nil, err
	}
	files, err := c.search(ctx, datacenter, dp.Datastore, path.Dir(dp.Path), path.Base(dp.Path))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, NewError(ClassNotFound, "StatFile", "%s not found", p)
	}
	return &files[0], nil
}

// ListFiles lists the files (not folders) directly under "[ds] dir"; an absent folder is empty.
func (c *client) ListFiles(ctx context.Context, datacenter, dirPath string) ([]FileInfo, error) {
	files, err := c.listFiles(ctx, datacenter, dirPath)
	return files, observe("list-files", err)
}

func (c *client) listFiles(ctx context.Context, datacenter, dirPath string) ([]FileInfo, error) {
	dp, err := parseDatastorePath("ListFiles", dirPath)
	if err != nil {
		return nil, err
	}
	files, err := c.search(ctx, datacenter, dp.Datastore, dp.Path, "*")
	if IsNotFound(err) {
		return nil, nil
	}
	return files, err
}

// search runs one datastore browser search in dir for files matching pattern.
func (c *client) search(ctx context.Context, datacenter, dsName, dir, pattern string) ([]FileInfo, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, err
	}
	browser, err := d.browser(ctx, c, dsName)
	if err != nil {
		return nil, err
	}
	if dir == "." || dir == "/" {
		dir = ""
	}
	dirPath := (&object.DatastorePath{Datastore: dsName, Path: dir}).String()
	spec := types.HostDatastoreBrowserSearchSpec{
		MatchPattern: []string{pattern},
		Details:      &types.FileQueryFlags{FileType: true, FileSize: true, Modification: true},
	}
	t, err := browser.SearchDatastore(ctx, dirPath, &spec)
	if err != nil {
		return nil, classify("SearchDatastore", err)
	}
	info, err := c.waitTask(ctx, t.Reference())
	if err != nil {
		return nil, classify("SearchDatastore", err)
	}
	res, ok := info.Result.(types.HostDatastoreBrowserSearchResults)
	if !ok {
		return nil, nil
	}
	var out []FileInfo
	for _, f := range res.File {
		if _, isFolder := f.(*types.FolderFileInfo); isFolder {
			continue
		}
		fi := f.GetFileInfo()
		entry := FileInfo{Name: fi.Path, SizeBytes: fi.FileSize,
			Path: (&object.DatastorePath{Datastore: dsName, Path: path.Join(dir, fi.Path)}).String()}
		if fi.Modification != nil {
			entry.Modified = *fi.Modification
		}
		out = append(out, entry)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// browser returns the datastore's browser, cached.
func (d *dcCache) browser(ctx context.Context, c *client, dsName string) (*object.HostDatastoreBrowser, error) {
	ds, err := d.datastore(ctx, dsName)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	ref, ok := d.browsers[dsName]
	d.mu.Unlock()
	if !ok {
		var m mo.Datastore
		if err := c.pc().RetrieveOne(ctx, ds.Reference(), []string{"browser"}, &m); err != nil {
			return nil, classify("SearchDatastore", err)
		}
		ref = m.Browser
		d.mu.Lock()
		d.browsers[dsName] = ref
		d.mu.Unlock()
	}
	return object.NewHostDatastoreBrowser(c.vim, ref), nil
}

// DeleteFile deletes a datastore file; absent is success.
func (c *client) DeleteFile(ctx context.Context, datacenter, p string) error {
	err := func() error {
		if _, err := parseDatastorePath("DeleteFile", p); err != nil {
			return err
		}
		d, err := c.datacenter(ctx, datacenter)
		if err != nil {
			return err
		}
		return c.deleteFile(ctx, d, p)
	}()
	return observe("delete-file", err)
}

func (c *client) deleteFile(ctx context.Context, d *dcCache, p string) error {
	t, err := object.NewFileManager(c.vim).DeleteDatastoreFile(ctx, p, d.dc)
	if err == nil {
		_, err = c.waitTask(ctx, t.Reference())
	}
	if err != nil && isFault(err, &types.FileNotFound{}) {
		return nil
	}
	return classify("DeleteDatastoreFile", err)
}

// VMsWithISO lists every VM of the datacenter (any state, any owner) with a CD-ROM backed by isoPath,
// in one property-collector pass, so a cache never prunes an ISO that some VM still has attached.
func (c *client) VMsWithISO(ctx context.Context, datacenter, isoPath string) ([]string, error) {
	var names []string
	err := c.eachVM(ctx, datacenter, []string{"name", "config.hardware.device"}, func(vm *mo.VirtualMachine) {
		if vm.Config == nil {
			return
		}
		for _, dev := range vm.Config.Hardware.Device {
			if cd, ok := dev.(*types.VirtualCdrom); ok && sameDatastorePath(isoPathOf(cd), isoPath) {
				names = append(names, vm.Name)
				return
			}
		}
	})
	sort.Strings(names)
	return names, observe("vms-with-iso", err)
}

// Command ocilayout writes the otelcol-profiler release image as an OCI
// image layout holding one image per architecture under one index, so a
// single tag serves amd64 and arm64 nodes. Each image is what the
// Dockerfile next to it describes (FROM scratch, the staged rootfs as its
// one layer, the collector as entrypoint, user 0): with nothing to run at
// build time, no engine and no emulator is needed to build the arm64 one
// here. go-containerregistry writes the layout (digests, media types).
//
//	ocilayout OUT_DIR TAG ARCH=ROOTFS [ARCH=ROOTFS...]
//
// The layout's index.json names one entry, the multi-architecture index,
// with TAG as its org.opencontainers.image.ref.name.
//
// Push the result with any OCI tool, e.g.
// `skopeo copy --all oci:OUT_DIR:TAG docker://REGISTRY/otelcol-profiler:TAG`.
package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entrypoint is the Dockerfile's ENTRYPOINT.
const entrypoint = "/usr/local/bin/otelcol-profiler"

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: ocilayout OUT_DIR TAG ARCH=ROOTFS [ARCH=ROOTFS...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3:]); err != nil {
		fmt.Fprintln(os.Stderr, "ocilayout:", err)
		os.Exit(1)
	}
}

func run(out, tag string, specs []string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".ocilayout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, spec := range specs {
		arch, root, ok := strings.Cut(spec, "=")
		if !ok || (arch != "amd64" && arch != "arm64") {
			return fmt.Errorf("%q: want amd64=ROOTFS or arm64=ROOTFS", spec)
		}
		img, err := image(arch, root, tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: "linux", Architecture: arch},
			},
		})
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
	}))
}

// image is FROM scratch + COPY rootfs/ / for one architecture. The layer's
// tar goes to a file (the library reads it more than once: digests,
// compression), removed when the layout is written.
func image(arch, root string, tmp string) (v1.Image, error) {
	f, err := os.CreateTemp(tmp, "layer-"+arch+"-*.tar")
	if err != nil {
		return nil, err
	}
	err = tarTree(root, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(f.Name(), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.User = "0:0"
	return mutate.ConfigFile(img, cf)
}

// tarTree is root as a tar stream with its paths relative to /, owned by
// root, in a fixed order with a fixed time: the same files give the same
// layer digest on every build.
func tarTree(root string, w io.Writer) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !fi.Mode().IsRegular() && !fi.IsDir() {
			return fmt.Errorf("%s: neither a file, a directory nor a symlink", p)
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

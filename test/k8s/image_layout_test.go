package k8s

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The release image as `make image-oci` writes it (OTELPROF_IMAGE_OCI):
// an OCI layout whose one tag is an index of one image per architecture,
// each FROM scratch with the staged root as its layer. Read here with the
// standard library alone (not the library that wrote it): every blob's
// digest, each image's platform and config, and in its layer the very
// collector and library `make` built for that architecture, every ELF file
// of the right machine.
func TestImageLayout(t *testing.T) {
	dir := os.Getenv("OTELPROF_IMAGE_OCI")
	build := os.Getenv("OTELPROF_BUILD")
	if dir == "" || build == "" {
		t.Fatal("OTELPROF_IMAGE_OCI and OTELPROF_BUILD are not set: run make test-k8s")
	}
	blob := func(digest string) []byte {
		t.Helper()
		algo, hexd, ok := strings.Cut(digest, ":")
		if !ok || algo != "sha256" {
			t.Fatalf("digest %q", digest)
		}
		b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", hexd))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexd {
			t.Fatalf("blob %s: content does not match its digest", digest)
		}
		return b
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
		Platform    *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	}
	type index struct {
		MediaType string       `json:"mediaType"`
		Manifests []descriptor `json:"manifests"`
	}
	var top, multi index
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" ||
		top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == "" {
		t.Fatalf("index.json: want one tagged image index, got %+v", top.Manifests)
	}
	if err := json.Unmarshal(blob(top.Manifests[0].Digest), &multi); err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	builds := map[string]string{"amd64": build, "arm64": filepath.Join(build, "arm64")}
	var archs []string
	for _, m := range multi.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" || machines[m.Platform.Architecture] == 0 {
			t.Fatalf("manifest %s: platform %+v", m.Digest, m.Platform)
		}
		arch := m.Platform.Architecture
		archs = append(archs, arch)
		var man struct {
			Config descriptor   `json:"config"`
			Layers []descriptor `json:"layers"`
		}
		if err := json.Unmarshal(blob(m.Digest), &man); err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Config       struct {
				Entrypoint []string `json:"Entrypoint"`
				User       string   `json:"User"`
			} `json:"config"`
		}
		if err := json.Unmarshal(blob(man.Config.Digest), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.OS != "linux" || cfg.Architecture != arch || len(cfg.Config.Entrypoint) != 1 ||
			cfg.Config.Entrypoint[0] != "/usr/local/bin/otelcol-profiler" || cfg.Config.User != "0:0" {
			t.Errorf("%s: config %+v", arch, cfg)
		}
		if len(man.Layers) != 1 {
			t.Fatalf("%s: %d layers, want the root as one", arch, len(man.Layers))
		}
		files := layerFiles(t, blob(man.Layers[0].Digest))
		nelf := 0
		for name, b := range files {
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				continue // not ELF (certificates, ...)
			}
			nelf++
			if f.Machine != machines[arch] {
				t.Errorf("%s image: %s is %v", arch, name, f.Machine)
			}
		}
		for _, want := range []struct{ inImage, built string }{
			{"usr/local/bin/otelcol-profiler", "otelcol-profiler"},
			{"usr/local/lib/libotelprofiler.so.0", "libotelprofiler.so.0"},
		} {
			built, err := os.ReadFile(filepath.Join(builds[arch], want.built))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(files[want.inImage], built) {
				t.Errorf("%s image: %s is not %s (%d bytes vs %d)", arch, want.inImage,
					filepath.Join(builds[arch], want.built), len(files[want.inImage]), len(built))
			}
		}
		t.Logf("%s: %d files, %d ELF files of %v; collector and library those of %s", arch, len(files), nelf, machines[arch], builds[arch])
	}
	sort.Strings(archs)
	if strings.Join(archs, ",") != strings.Join(imageArchitectures, ",") {
		t.Errorf("image index architectures %v, want %v (what the manifests schedule on)", archs, imageArchitectures)
	}
}

// layerFiles: the regular files of a gzip'd tar layer by path, symlinks
// followed inside the layer (the library is reached by its soname link).
func layerFiles(t *testing.T, layer []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files, links := map[string][]byte{}, map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = b
		case tar.TypeSymlink:
			links[name] = h.Linkname
		}
	}
	for name, target := range links {
		at := name
		for hop := 0; hop < 8; hop++ {
			if !strings.HasPrefix(target, "/") {
				target = filepath.Join(filepath.Dir(at), target)
			}
			target = strings.TrimPrefix(target, "/")
			next, ok := links[target]
			if !ok {
				break
			}
			at, target = target, next
		}
		if b, ok := files[target]; ok {
			files[name] = b
		}
	}
	return files
}

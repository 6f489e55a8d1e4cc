#!/usr/bin/env bash
# The image's root file system (make image-context) runs what the pods run,
# without Docker: in a private mount namespace with /proc and /sys mounted,
# chrooted into build/image/rootfs, as root:
#   1. the library resolves every shared library from the image alone;
#   2. the shipped agent and gateway configs validate;
#   3. the collector profiles this host for a few seconds with the
#      library from the image (profiling receiver -> file exporter).
#   test/k8s/image_smoke.sh BUILD_DIR
set -euo pipefail
build=$1
r=$build/image/rootfs
[ -x "$r/usr/local/bin/otelcol-profiler" ] || { echo "no $r: run make image-context" >&2; exit 1; }
in_image() { unshare --mount --fork sh -c "mount -t proc proc '$r/proc' && mount --rbind /sys '$r/sys' && chroot '$r' $*"; }

if chroot "$r" /lib64/ld-linux-x86-64.so.2 --list /usr/local/lib/libotelprofiler.so | grep 'not found'; then
	echo "image: libotelprofiler has unresolved libraries" >&2
	exit 1
fi
for c in collector-config gateway-config; do
	cp "collector-config/k8s/$c.yaml" "$r/tmp/$c.yaml"
	K8S_NODE_NAME=node-1 BACKEND_ENDPOINT=backend:4317 in_image /usr/local/bin/otelcol-profiler validate \
		--feature-gates=+service.profilesSupport --config=/tmp/$c.yaml
	rm -f "$r/tmp/$c.yaml"
	echo "  image: k8s/$c.yaml validates"
done

cat > "$r/tmp/smoke.yaml" <<'YAML'
receivers:
  profiling:
    samples_per_second: 99
    reporter_interval: 1s
    library_path: /usr/local/lib/libotelprofiler.so
exporters:
  file:
    path: /tmp/smoke-profiles.jsonl
service:
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file]
  telemetry:
    metrics:
      level: none
YAML
rm -f "$r/tmp/smoke-profiles.jsonl"
timeout -s INT 6 bash -c "$(declare -f in_image); r='$r'; in_image /usr/local/bin/otelcol-profiler \
	--feature-gates=+service.profilesSupport --config=/tmp/smoke.yaml" > "$build/image/smoke.log" 2>&1 || true
if ! grep -q '"resourceProfiles"' "$r/tmp/smoke-profiles.jsonl" 2>/dev/null; then
	echo "image: the collector wrote no profiles; log:" >&2
	tail -20 "$build/image/smoke.log" >&2
	exit 1
fi
echo "  image: profiled this host ($(wc -l < "$r/tmp/smoke-profiles.jsonl") payloads)"
rm -f "$r/tmp/smoke.yaml" "$r/tmp/smoke-profiles.jsonl"

// SPDX-License-Identifier: Apache-2.0
#include "otlp_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "otlp_json.h"

typedef Otelprof__Otlp__ProfilesData ProfilesData;

static int push(struct otlp_docs *d, ProfilesData *pd)
{
	ProfilesData **nv = realloc(d->v, (d->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	d->v = nv;
	d->v[d->n++] = pd;
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* The Collector file exporter's `format: proto`: each message preceded by
 * its size, 4 bytes big-endian. True when the sizes tile buf exactly (a
 * single ProfilesData starts with a field tag, 0x0a or 0x12, so its first
 * "size" would be over 160 MiB). */
static bool length_prefixed(const uint8_t *buf, size_t len)
{
	size_t i = 0;

	if (len < 4)
		return false;
	while (i < len) {
		uint32_t n;

		if (len - i < 4)
			return false;
		n = be32(buf + i);
		if (n > len - i - 4)
			return false;
		i += 4 + (size_t)n;
	}
	return true;
}

static int parse_length_prefixed(const uint8_t *buf, size_t len,
				 struct otlp_docs *out, char *err,
				 size_t errlen)
{
	for (size_t i = 0, k = 0; i < len; k++) {
		uint32_t n = be32(buf + i);
		ProfilesData *pd = otelprof__otlp__profiles_data__unpack(
			NULL, n, buf + i + 4);

		if (!pd) {
			snprintf(err, errlen,
				 "message %zu (byte %zu) of a length-prefixed "
				 "file is not an OTLP ProfilesData",
				 k + 1, i);
			otlp_docs_free(out);
			return -EINVAL;
		}
		if (push(out, pd)) {
			otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
			otlp_docs_free(out);
			return -ENOMEM;
		}
		i += 4 + (size_t)n;
	}
	return 0;
}

int otlp_docs_parse(const uint8_t *buf, size_t len, struct otlp_docs *out,
		    char *err, size_t errlen)
{
	size_t i = 0, lineno = 0;

	memset(out, 0, sizeof(*out));
	if (length_prefixed(buf, len) &&
	    !parse_length_prefixed(buf, len, out, err, errlen))
		return 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' ||
			   buf[i] == '\t'))
		i++;
	if (i == len || buf[i] != '{') {
		ProfilesData *pd =
			otelprof__otlp__profiles_data__unpack(NULL, len, buf);

		if (!pd) {
			snprintf(err, errlen,
				 "not an OTLP ProfilesData message (protobuf) "
				 "nor OTLP/JSON");
			return -EINVAL;
		}
		if (push(out, pd)) {
			otelprof__otlp__profiles_data__free_unpacked(pd, NULL);
			return -ENOMEM;
		}
		return 0;
	}
	/* JSON lines: every non-empty line is one request. */
	while (i < len) {
		const uint8_t *nl = memchr(buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - buf) : len;
		char lerr[256];
		ProfilesData *pd;

		lineno++;
		if (end > i) {
			size_t k = i;

			while (k < end && (buf[k] == ' ' || buf[k] == '\r' ||
					   buf[k] == '\t'))
				k++;
			if (k < end) {
				pd = otlp_json_decode((const char *)buf + i,
						      end - i, lerr,
						      sizeof(lerr));
				if (!pd) {
					snprintf(err, errlen, "line %zu: %s",
						 lineno, lerr);
					otlp_docs_free(out);
					return -EINVAL;
				}
				if (push(out, pd)) {
					otelprof__otlp__profiles_data__free_unpacked(
						pd, NULL);
					otlp_docs_free(out);
					return -ENOMEM;
				}
			}
		}
		i = end + 1;
	}
	return 0;
}

int otlp_docs_read(const char *path, struct otlp_docs *out, char *err,
		   size_t errlen)
{
	/* A regular file only, opened without blocking (not a FIFO). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	int e;

	memset(out, 0, sizeof(*out));
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s", strerror(-e));
		return e;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "not a regular file");
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > OTLP_INPUT_MAX_BYTES) {
		close(fd);
		snprintf(err, errlen, "larger than %u bytes",
			 OTLP_INPUT_MAX_BYTES);
		return -EFBIG;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	e = otlp_docs_parse(buf, n, out, err, errlen);
	free(buf);
	return e;
}

void otlp_docs_free(struct otlp_docs *d)
{
	for (size_t i = 0; i < d->n; i++)
		otelprof__otlp__profiles_data__free_unpacked(d->v[i], NULL);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

const char *otlp_str(const Otelprof__Otlp__ProfilesDictionary *d, int64_t i)
{
	return d && i >= 0 && (size_t)i < d->n_string_table ? d->string_table[i]
							    : "";
}

const Otelprof__Otlp__AnyValue *
otlp_resource_attr(const ProfilesData *pd,
		   const Otelprof__Otlp__ResourceProfiles *rp, const char *key)
{
	if (!rp->resource)
		return NULL;
	for (size_t i = 0; i < rp->resource->n_attributes; i++) {
		const Otelprof__Otlp__KeyValue *kv =
			rp->resource->attributes[i];
		const char *k =
			kv->key && *kv->key
				? kv->key
				: otlp_str(pd->dictionary, kv->key_strindex);

		if (!strcmp(k, key))
			return kv->value;
	}
	return NULL;
}

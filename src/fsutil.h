/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsutil.h — small file-system helpers of the runtime (private).
 *
 * Every helper sets modes explicitly (folders 0750, files 0640 unless told)
 * and never touches the process umask, which belongs to the host program.
 */
#ifndef SERVPROF_FSUTIL_H
#define SERVPROF_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#define SP_DIR_MODE 0750
#define SP_FILE_MODE 0640

/* Creates path and every missing parent with `mode` (forced with chmod on
 * the folders it creates, so the umask cannot narrow them). Returns 0 or
 * -errno; existing folders are left as they are. */
int sp_mkdirs(const char *path, mode_t mode);

/* Reads at most `max` bytes of a file into a malloc'ed, NUL-terminated
 * buffer (*out, freed by the caller with free()). Returns 0, -errno,
 * -EFBIG when the file is larger than max, -EISDIR / -EINVAL when it is a
 * folder / not a regular file (never blocks on a FIFO). */
int sp_read_file(const char *path, size_t max, char **out, size_t *len);

/* Replaces path with data atomically: a temp file in the same folder,
 * written, fsync'ed, then renamed over path. When path exists its mode is
 * kept, otherwise `mode` is used. A symlink is followed, so the link
 * stays and its target is replaced. Returns 0 or -errno. */
int sp_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* The same; durable = 0 skips the fsync (files that only matter while the
 * machine is up, such as the session state: saves milliseconds per start). */
int sp_write_replace(const char *path, const void *data, size_t len, mode_t mode, int durable);

/* Nonzero when the folder exists and this process may create files in it. */
int sp_dir_writable(const char *dir);

/* Copies the folder part of path ("." when none) / the last part. */
void sp_path_dirname(const char *path, char *out, size_t len);
const char *sp_path_basename(const char *path);

#endif

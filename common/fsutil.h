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

/* How an output file at `path` is written (the CLI's report page, parse
 * outputs, config files), so that writing never replaces what is not a file:
 *   SP_OUT_REPLACE   path is absent or a regular file: write a temp file
 *                    next to `target` and rename it over `target`. A
 *                    symlink is followed (target is where it points), so
 *                    the link stays a link and its file gets the data.
 *   SP_OUT_IN_PLACE  path exists and is not a regular file nor a folder
 *                    (a FIFO, a character device such as /dev/null), or is
 *                    a dangling symlink: open and write path itself
 *                    (which creates a dangling link's target); a
 *                    rename would replace the node with a plain file.
 * Returns one of them (target holds the path to use), or -errno: -EISDIR
 * for a folder, -ENAMETOOLONG (cap must be at least PATH_MAX). */
enum { SP_OUT_REPLACE = 0, SP_OUT_IN_PLACE = 1 };
int sp_output_target(const char *path, char *target, size_t cap);

/* Replaces path with data atomically: a temp file in the same folder,
 * written, fsync'ed, then renamed over path. When path exists its mode is
 * kept, otherwise `mode` is used. A symlink is followed, so the link
 * stays and its target is replaced. A path that is not a regular file (a
 * FIFO, a device: sp_output_target) is written in place, not replaced.
 * Returns 0 or -errno. */
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

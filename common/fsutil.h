/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsutil.h — small file-system helpers of the runtime (private).
 *
 * Every helper passes its mode (folders 0750, files 0640 unless told) to
 * mkdir()/open(), so the process umask can narrow it but never widen it;
 * the umask itself belongs to the host program and is never changed.
 *
 * Shared folders (the "trusted" helpers below, used for prof_dir, the
 * session folders and the files in them): a folder or file the library
 * writes into or takes control data from must be owned by this process's
 * effective user (or root) and not writable by group or others, except a
 * folder with the sticky bit (as /tmp), where others cannot rename or
 * remove what we own. Files are opened relative to an opened folder
 * (openat) with O_NOFOLLOW, so a planted symlink is refused, never followed.
 */
#ifndef SERVPROF_FSUTIL_H
#define SERVPROF_FSUTIL_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SP_DIR_MODE 0750
#define SP_FILE_MODE 0640

/* Creates path and every missing parent with `mode` (narrowed by the umask,
 * never widened). Returns 0 or -errno; existing folders are left as they
 * are. */
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
 * A symlink that is not trusted (another user's, or in a folder others can
 * write: sp_output_name_trusted) is not followed: SP_OUT_REPLACE of path
 * itself, so the link is replaced by the new file.
 * Returns one of them (target holds the path to use), or -errno: -EISDIR
 * for a folder, -ENAMETOOLONG (cap must be at least PATH_MAX). */
enum { SP_OUT_REPLACE = 0, SP_OUT_IN_PLACE = 1 };
int sp_output_target(const char *path, char *target, size_t cap);

/* Nonzero when nobody but us (or root) can have put what is at path: its
 * folder passes the trust rule (below) and, when path is a symlink, the
 * link is ours or root's. A temp name of an output (NAME.partial) in such
 * a folder may be opened as it is (following a link the user made);
 * elsewhere it is removed and made anew with O_EXCL | O_NOFOLLOW. */
int sp_output_name_trusted(const char *path);

/* Replaces path with data atomically: a temp file in the same folder,
 * written, fsync'ed, then renamed over path. When path exists its mode is
 * kept, otherwise `mode` is used. A symlink is followed, so the link
 * stays and its target is replaced. A path that is not a regular file (a
 * FIFO, a device: sp_output_target) is written in place, not replaced.
 * The temps of path that a killed writer left (its process gone, the file
 * ten minutes old) are removed first. Returns 0 or -errno. */
int sp_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* The same; durable = 0 skips the fsync (files that only matter while the
 * machine is up, such as the session state: saves milliseconds per start). */
int sp_write_replace(const char *path, const void *data, size_t len, mode_t mode, int durable);

/* ---- trusted folders and files (see the top of this file) ------------ */

/* Nonzero when st passes the trust rule; otherwise 0 and `why` says what is
 * wrong, without the path ("is owned by uid 1001, not by this process's uid
 * 0"). is_dir: a folder may be world-writable when it has the sticky bit. */
int sp_trusted_stat(const struct stat *st, int is_dir, char *why, size_t whylen);

/* Opens folder `name` relative to dfd (AT_FDCWD: a path), O_DIRECTORY; with
 * nofollow a symlink in its place is refused. The folder must pass the
 * trust rule. Returns the fd (the caller closes it), or -errno: -EPERM
 * when it is not trusted, -ELOOP when a symlink was refused, with `why`
 * saying so. */
int sp_dir_open_trusted(int dfd, const char *name, int nofollow, char *why, size_t whylen);

/* mkdirat(dfd, name, mode) when it is missing, then sp_dir_open_trusted
 * with nofollow. Returns the fd or -errno (why filled). */
int sp_mkdir_open_at(int dfd, const char *name, mode_t mode, char *why, size_t whylen);

/* Opens file `name` in folder dfd with flags | O_NOFOLLOW | O_CLOEXEC |
 * O_NONBLOCK (mode for O_CREAT) and checks what was opened: a regular file,
 * one link only (not a hard link to someone's file), trusted. Returns the
 * fd or -errno (-ELOOP: a symlink; -EPERM: not trusted; -EINVAL: not a
 * regular file), with `why` saying so. */
int sp_file_open_at(int dfd, const char *name, int flags, mode_t mode, char *why, size_t whylen);

/* Reads a whole trusted file `name` of folder dfd, as sp_read_file. */
int sp_read_at(int dfd, const char *name, size_t max, char **out, size_t *len, char *why,
               size_t whylen);

/* Replaces file `name` of folder dfd with data: a temp file created with
 * O_EXCL | O_NOFOLLOW in the same folder, renamed over name (a symlink in
 * its place is replaced, never followed). durable: fsync before the
 * rename. Returns 0 or -errno. */
int sp_replace_at(int dfd, const char *name, const void *data, size_t len, mode_t mode,
                  int durable);

/* Creates (or opens) the file at path with O_NOFOLLOW and `mode`, checks it
 * as sp_file_open_at does, and closes it: for files that a library such as
 * SQLite then opens by path (its own opens use O_NOFOLLOW too), so that
 * their mode is ours and a planted file is refused. Returns 0 or -errno. */
int sp_precreate_file(const char *path, mode_t mode, char *why, size_t whylen);

/* Nonzero when the folder exists and this process may create files in it. */
int sp_dir_writable(const char *dir);

/* Copies the folder part of path ("." when none) / the last part. */
void sp_path_dirname(const char *path, char *out, size_t len);
const char *sp_path_basename(const char *path);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * splittmp.h — the private folder `servprof split` parses raw stores into
 * (splittmp.c): made under $TMPDIR (or /tmp), held by a lock for the run,
 * removed afterwards; one that a killed run left behind is removed by the
 * next run. Internal to the split; each call works on the caller's own
 * folder, so two runs (threads or processes) never share one.
 */
#ifndef SERVPROF_SPLITTMP_H
#define SERVPROF_SPLITTMP_H

#include <stddef.h>

/* The folder's name starts with this, then mkdtemp's six characters. */
#define SA_SPLIT_TMP_PREFIX "servprof-split-"

/* Removes the folders of earlier runs under the temporary root that no
 * run holds any more: the lock file in them is not locked, or (killed
 * before it was made) the folder is a minute old. Only this user's
 * folders; a folder still in use is left alone. Returns how many went. */
int sa_split_tmp_sweep(void);

/* Makes a new folder (its path into buf, cap bytes) and locks it for this
 * run. Returns the lock's descriptor (>= 0), or -errno. */
int sa_split_tmp_make(char *buf, size_t cap);

/* Removes the folder and everything in it, then closes the lock `fd`. */
void sa_split_tmp_remove(const char *dir, int fd);

#endif

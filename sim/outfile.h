/* sim/outfile.h — output files that appear whole or not at all.
 *
 * Every file kvsim and the probe write as a result (a generated trace, a
 * calibration, a baseline, a sweep's emitted configs, an export, a report's
 * pages and figure data) is written under a temporary name beside its
 * destination (`PATH.tmp.PID`) and renamed into place only after every byte
 * reached the file system: a full disk, a file-size limit (SIGXFSZ is
 * ignored by main, so write() fails with EFBIG instead of killing the
 * process) or an error half-way leaves the destination untouched and no
 * temporary behind. "-" writes to stdout, and a destination that exists and
 * is not a regular file (/dev/null, a pipe) is written in place: there is
 * nothing to rename.
 *
 * Every file is created new (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 less the
 * umask): a link or file someone planted at a temporary's name is never
 * followed nor truncated; the next name (PATH.tmp.PID.1, .2, ...) is taken
 * instead. A folder of files kvsim names itself (`kvsim report -o DIR`) is
 * written into a private folder made with mkdtemp inside DIR and moved into
 * DIR entry by entry (sim_outdir_publish): a link planted in DIR under one of
 * those names is replaced, never followed. */
#ifndef SIM_OUTFILE_H
#define SIM_OUTFILE_H

#include <stdio.h>

#include "sim/util.h"

typedef struct sim_outfile {
    FILE *f;    /* write here between open and close */
    char *path; /* destination, as given (errors name it) */
    char *tmp;  /* temporary name; NULL when written in place (stdout, a device) */
    char *dest; /* rename target: path, or the file a symbolic link names */
} sim_outfile;

/* Open path for writing (under its temporary name). A destination whose
 * folder does not exist is an error naming it: nothing is created. */
int sim_outfile_open(sim_outfile *o, const char *path, sim_err *err);
/* Flush, check every write, close and rename into place. On any error the
 * temporary is removed, the destination left as it was, and err names the
 * destination and the cause (e.g. "No space left on device"); stdout's
 * error flag is cleared then (main checks stdout at exit: one message). */
int sim_outfile_close(sim_outfile *o, sim_err *err);
/* 0 when path's folder exists (the check open makes; a command that works
 * long before writing makes it first), else -1 with err naming it. */
int sim_outfile_check_dir(const char *path, sim_err *err);
/* Give up: close and remove the temporary (safe after a failed open). On
 * stdout, clear its error flag: the caller reports the failure itself. */
void sim_outfile_abort(sim_outfile *o);

/* Create path (relative to the open folder dir, or AT_FDCWD) as a new file
 * for writing: NULL (errno and err, when not NULL, say why, e.g. "File
 * exists") when anything, a link included, is there. */
FILE *sim_file_create(int dir, const char *path, sim_err *err);
/* Move every entry of the open folder stage into folder dir, replacing what
 * dir has under the same name (a file or a link there is replaced, not
 * followed; a subfolder is merged into a real folder of its name, or moved
 * whole), the entry named last (e.g. "index.html"; NULL: none) after all
 * the others. err names the entry that could not be moved. With a manifest
 * name (NULL: none), the published entries' names are kept in dir under
 * it, and what the previous manifest there named and this publish did not
 * write again is removed: a folder published into again holds no file of
 * the last publish that this one no longer makes (anything else in dir is
 * left alone). */
int sim_outdir_publish(int stage, const char *dir, const char *last, const char *manifest, sim_err *err);
/* Remove a folder and everything in it; a link, at path or inside, is
 * removed itself, never followed. */
void sim_remove_tree(const char *path);

#endif

/* backup.h - online backups of the store and their restore
 * (docs/operations.md, "Backups").
 *
 * A backup is a data directory: headroom.db written by SQLite's VACUUM
 * INTO from one read snapshot (consistent while runs are being written,
 * and compact), plus datasets/<sha256> for every dataset that copy names
 * (hard-linked when on the same file system: the files never change).
 * `headroomd backup`, `POST /api/v1/backups` (admin) and `headroomd
 * restore` (which checks the database's integrity and every dataset
 * file's hash before copying) are its three doors.
 */
#ifndef HR_BACKUP_H
#define HR_BACKUP_H

#include <jansson.h>

#include "store.h"

/* Writes the backup of s into dest (a directory it creates; it must not
 * exist). 0 and *info {path, runs, datasets, bytes, seconds}, or -1 with
 * err. */
int backup_make(struct store *s, const char *dest, json_t **info, char *err);
/* `headroomd backup [--data DIR] DEST` and `headroomd restore [--data
 * NEWDIR] BACKUP`: argv after the subcommand; the exit status. */
int backup_command(int argc, char **argv);
int restore_command(int argc, char **argv);

#endif

/*
 * report_read.h - a report file back into an lt_rep (report_data.h), checked field by field
 * against docs/report-schema.md, so the formatter can trust every index and name in it.
 */
#ifndef LT_REPORT_READ_H
#define LT_REPORT_READ_H

#include "report_data.h"

typedef struct lt_rep_file lt_rep_file;

/* Reads report text[0..len). Returns NULL with the problem in err (naming the field, or the
 * line and column of bad JSON). The lt_rep lives as long as the lt_rep_file. */
lt_rep_file *lt_rep_read(const char *text, size_t len, char *err, size_t errsize);
lt_rep *lt_rep_of(lt_rep_file *f);
void lt_rep_file_free(lt_rep_file *f);

/* Reads the whole file at path into a NUL-terminated buffer (free() it); NULL with the
 * problem in err. Files over max_bytes are refused. */
char *lt_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t errsize);

#endif

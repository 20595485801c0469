/*
 * config.h - the settings read from LOCKTRACE_* once at load (config.c; the options
 * themselves are listed in config.def).
 */
#ifndef LT_CONFIG_H
#define LT_CONFIG_H

#include <stddef.h>

typedef enum { LT_ACTION_ABORT, LT_ACTION_EDEADLK } lt_action;
typedef enum { LT_STACKS_LAZY, LT_STACKS_FULL } lt_stacks_mode;
typedef enum { LT_INVERSION_REPORT, LT_INVERSION_ABORT, LT_INVERSION_OFF } lt_inversion_mode;
typedef enum { LT_FREE_HELD_REPORT, LT_FREE_HELD_ABORT, LT_FREE_HELD_OFF } lt_free_held_mode;
typedef enum { LT_CLASSES_OFF, LT_CLASSES_SITE, LT_CLASSES_ANNOTATED } lt_classes_mode;
#define LT_CFG_TYPE_CHOICE int
#define LT_CFG_TYPE_UINT int
#define LT_CFG_TYPE_BOOL int
#define LT_CFG_TYPE_SIZE size_t
#define LT_CFG_TYPE_STR const char * /* "" when unset */
typedef struct lt_config {
#define LT_OPTION(kind, field, name, def, accepted, help) LT_CFG_TYPE_##kind field;
#include "config.def"
#undef LT_OPTION
} lt_config;
/* hidden: read with one instruction, not an address first (every lock call reads it) */
extern lt_config lt_cfg __attribute__((visibility("hidden")));
void lt_config_load(void);
/* var ("LOCKTRACE_WAIT_TIMEOUT") at buf+at as a message names it: with the launcher's option
 * first ("--wait-timeout (LOCKTRACE_WAIT_TIMEOUT)") when the launcher started the process. */
size_t lt_config_named(char *buf, size_t size, size_t at, const char *var);

#endif

/*
 * platform_macos.h - what platform_macos.c needs from interpose_macos.c.
 */
#ifndef LT_PLATFORM_MACOS_H
#define LT_PLATFORM_MACOS_H

/* The libsystem function `name` that the interpose table replaces; NULL for any other name
 * (the functions macOS lacks: timed, clock and spin locks). */
void *lt_macos_real(const char *name);

#endif

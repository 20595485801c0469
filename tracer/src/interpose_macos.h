/*
 * interpose_macos.h - on macOS, included first by interpose.c: gives its entry points names
 * of their own (lt_macos_<function>), prototypes included.
 *
 * dyld binds an image's imports to the library that exports them (two-level namespace), so
 * a preloaded library that merely defines pthread_mutex_lock is never called. Instead
 * interpose_macos.c lists (replacement, original) pairs in a __DATA,__interpose section,
 * and the replacement must not share the original's name there, or the pair would point at
 * itself. Only the functions macOS has are listed; the timed, clock and spin entry points
 * are compiled out of interpose.c.
 */
#ifndef LT_INTERPOSE_MACOS_H
#define LT_INTERPOSE_MACOS_H

#define pthread_rwlock_init lt_macos_pthread_rwlock_init
#define pthread_rwlock_destroy lt_macos_pthread_rwlock_destroy
#define pthread_rwlock_rdlock lt_macos_pthread_rwlock_rdlock
#define pthread_rwlock_wrlock lt_macos_pthread_rwlock_wrlock
#define pthread_rwlock_tryrdlock lt_macos_pthread_rwlock_tryrdlock
#define pthread_rwlock_trywrlock lt_macos_pthread_rwlock_trywrlock
#define pthread_rwlock_unlock lt_macos_pthread_rwlock_unlock
#define pthread_mutex_init lt_macos_pthread_mutex_init
#define pthread_mutex_destroy lt_macos_pthread_mutex_destroy
#define pthread_mutex_lock lt_macos_pthread_mutex_lock
#define pthread_mutex_trylock lt_macos_pthread_mutex_trylock
#define pthread_mutex_unlock lt_macos_pthread_mutex_unlock
#define pthread_cond_wait lt_macos_pthread_cond_wait
#define pthread_cond_timedwait lt_macos_pthread_cond_timedwait
#define pthread_cond_signal lt_macos_pthread_cond_signal
#define pthread_cond_broadcast lt_macos_pthread_cond_broadcast
#define pthread_cond_destroy lt_macos_pthread_cond_destroy
#define pthread_join lt_macos_pthread_join
#define pthread_create lt_macos_pthread_create

#endif

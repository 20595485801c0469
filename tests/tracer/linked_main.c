/*
 * linked_main.c - the shape of a library's test program: it calls a library that takes locks
 * (minilib, a storage under one rwlock) and no pthread function itself. Built with
 * liblocktrace_link_dep, liblocktrace must still be a DT_NEEDED ahead of libc, even under
 * meson's default -Wl,--as-needed, so the in-place op on one storage is caught without
 * LD_PRELOAD.
 */
typedef struct mini_storage mini_storage;
mini_storage *mini_new(void);
int mini_add_inplace(mini_storage *dst, mini_storage *src);

int main(void)
{
    mini_storage *s = mini_new();
    return mini_add_inplace(s, s) == 0 ? 0 : 1;
}

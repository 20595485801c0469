/*
 * cancel_ctor_plugin.c - a plugin whose constructor, run by dlopen with the loader's lock
 * held, calls back into the program that loads it (cancel_ctor.c).
 */
void cancel_ctor_in_constructor(void);

__attribute__((constructor)) static void plugin_init(void)
{
    cancel_ctor_in_constructor();
}

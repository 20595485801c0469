/*
 * wfstatic.c - a statically linked program: the dynamic linker never runs, so no preload
 * loads. As a script's interpreter (#!) it hides that from the launcher's look at the file,
 * and only the tracer's missing handshake can tell.
 */
#include <stdio.h>

int main(int argc, char **argv)
{
    printf("static program ran with %d arguments\n", argc - 1);
    (void)argv;
    return 0;
}

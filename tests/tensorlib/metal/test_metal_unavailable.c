/*
 * test_metal_unavailable.c - in a build or on a machine without Metal, TL_METAL is reported
 * unavailable and creating or moving a tensor there fails with TL_ERR_DEVICE and a message
 * that says why. Where Metal is available there is nothing to check: exit 77 (SKIP).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tl.h"

int main(void)
{
    static const size_t shape[] = {2, 2};
    if (tl_device_available(TL_METAL)) {
        printf("Metal is available here: the unavailable path cannot be checked\n");
        return 77;
    }
    CHECK(tl_zeros(shape, 2, TL_F32, TL_METAL) == NULL);
    CHECK(tl_last_status() == TL_ERR_DEVICE);
    CHECKF(strstr(tl_last_error(), "metal: not available on this platform") != NULL, "%s", tl_last_error());
#ifndef __APPLE__
    CHECKF(strstr(tl_last_error(), "(built without Metal)") != NULL, "%s", tl_last_error());
#endif
    tl_tensor *cpu = tl_ones(shape, 2, TL_F32, TL_CPU);
    CHECK(cpu && tl_to_device(cpu, TL_METAL) == NULL && tl_last_status() == TL_ERR_DEVICE);
    tl_release(cpu);
    printf("%s\n", tl_last_error());
    return check_summary();
}

/*
 * device.c - devices and the backend table for each.
 */
#include "backend.h"

#ifdef TL_HAVE_METAL
extern const tl_backend_i tl_metal_backend;
#endif

const tl_backend_i *tl_backend_of(tl_device device)
{
    switch (device) {
    case TL_CPU: return &tl_cpu_backend;
    case TL_METAL:
#ifdef TL_HAVE_METAL
        return &tl_metal_backend;
#else
        return NULL;
#endif
    }
    return NULL;
}

const char *tl_device_name(tl_device device)
{
    switch (device) {
    case TL_CPU: return "cpu";
    case TL_METAL: return "metal";
    }
    return "invalid-device";
}

bool tl_device_available(tl_device device)
{
    const tl_backend_i *b = tl_backend_of(device);
    return b && (!b->available || b->available());
}

/*
 * metal_device.m - the only Objective-C in tensorlib (macOS only, ARC): the MTLDevice, its
 * one command queue, shared-storage buffers, the embedded kernel library compiled on first
 * use, the pipeline cache, and the tlm_driver that lets command_queue.c run Metal's command
 * buffers and encoders.
 *
 * Locks, outermost first: the tensors' storage rwlocks (taken by the generic layer before it
 * calls the backend), then pipeline_lock (library and pipeline cache, released before
 * encoding), then the command queue's mutex (one op's encoding, or one wait). Nothing here
 * takes a storage lock, so the order never inverts.
 */
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "command_queue.h"
#include "dispatch.h"
#include "kernels.h"
#include "kernels_source.h"
#include "metal_device.h"

/* Encodes per command buffer before it is committed (candle commits every 50 as well), and
 * committed buffers the GPU may queue before the host waits for them. */
enum { ENCODES_PER_BUFFER = 50, MAX_IN_FLIGHT = 8 };

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static id<MTLDevice> device;
static id<MTLCommandQueue> queue;
static tlm_queue commands;

/* The current command buffer and compute encoder, and what was committed since the last
 * wait; touched only by the driver, under the command queue's mutex. */
static id<MTLCommandBuffer> current;
static id<MTLComputeCommandEncoder> encoder;
static NSMutableArray<id<MTLCommandBuffer>> *in_flight;
static char gpu_error[256];

static pthread_mutex_t pipeline_lock = PTHREAD_MUTEX_INITIALIZER;
static id<MTLLibrary> library;
static NSMutableDictionary<NSString *, id<MTLComputePipelineState>> *pipelines;

/* ------------------------------------------------------------------------------------------
 * The tlm_driver: Metal calls for command_queue.c's state machine
 * ---------------------------------------------------------------------------------------- */

static bool drv_begin_buffer(void *ctx)
{
    (void)ctx;
    current = [queue commandBuffer];
    return current != nil || (snprintf(gpu_error, sizeof gpu_error, "no command buffer"), false);
}

static bool drv_open_encoder(void *ctx)
{
    (void)ctx;
    encoder = [current computeCommandEncoder];
    return encoder != nil || (snprintf(gpu_error, sizeof gpu_error, "no compute encoder"), false);
}

static void drv_close_encoder(void *ctx)
{
    (void)ctx;
    [encoder endEncoding];
    encoder = nil;
}

static void drv_commit(void *ctx)
{
    (void)ctx;
    [current commit];
    [in_flight addObject:current];
    current = nil;
}

/* The queue runs buffers in order, but each one's status is checked, so a failure in an
 * earlier buffer is not hidden by a later success. */
static bool drv_wait_committed(void *ctx)
{
    (void)ctx;
    bool ok = true;
    for (id<MTLCommandBuffer> cb in in_flight) {
        [cb waitUntilCompleted];
        if (cb.status == MTLCommandBufferStatusError && ok) {
            snprintf(gpu_error, sizeof gpu_error, "%s",
                     cb.error ? cb.error.localizedDescription.UTF8String : "command buffer failed");
            ok = false;
        }
    }
    [in_flight removeAllObjects];
    return ok;
}

static const tlm_driver driver = {
    drv_begin_buffer,   /* begin_buffer */
    drv_open_encoder,   /* open_encoder */
    drv_close_encoder,  /* close_encoder */
    drv_commit,         /* commit */
    drv_wait_committed, /* wait_committed */
};

static tl_status queue_status(const char *op, tlm_qstatus st)
{
    switch (st) {
    case TLM_Q_OK: return TL_OK;
    case TLM_Q_NOMEM: return tl_fail(TL_ERR_NOMEM, "%s: metal: out of memory tracking GPU work", op);
    default: return tl_fail(TL_ERR_BACKEND, "%s: metal: %s", op, gpu_error);
    }
}

/* ------------------------------------------------------------------------------------------
 * Device and buffers
 * ---------------------------------------------------------------------------------------- */

static void init_device(void)
{
    @autoreleasepool {
        device = MTLCreateSystemDefaultDevice();
        if (!device)
            return;
        queue = [device newCommandQueue];
        if (!queue) {
            device = nil;
            return;
        }
        in_flight = [NSMutableArray array];
        pipelines = [NSMutableDictionary dictionary];
        tlm_queue_init(&commands, &driver, NULL, ENCODES_PER_BUFFER, MAX_IN_FLIGHT);
    }
}

bool tlm_metal_available(void)
{
    pthread_once(&init_once, init_device);
    return device != nil;
}

void *tlm_metal_alloc(size_t nbytes)
{
    if (!tlm_metal_available())
        return NULL;
    @autoreleasepool {
        /* Metal refuses zero-length buffers; an empty tensor still needs a handle. */
        id<MTLBuffer> b = [device newBufferWithLength:(nbytes ? nbytes : 1)
                                              options:MTLResourceStorageModeShared];
        return b ? (__bridge_retained void *)b : NULL;
    }
}

/* Command buffers retain what they use, so GPU work still pending on buf stays valid. */
void tlm_metal_free(void *buf)
{
    if (buf)
        CFRelease(buf);
}

tl_status tlm_metal_write(void *buf, size_t offset, const void *src, size_t nbytes)
{
    tl_status st = queue_status("write", tlm_queue_before_host_write(&commands, buf));
    if (st == TL_OK)
        memcpy((char *)((__bridge id<MTLBuffer>)buf).contents + offset, src, nbytes);
    return st;
}

tl_status tlm_metal_read(const void *buf, size_t offset, void *dst, size_t nbytes)
{
    tl_status st = queue_status("read", tlm_queue_before_host_read(&commands, buf));
    if (st == TL_OK)
        memcpy(dst, (const char *)((__bridge id<MTLBuffer>)buf).contents + offset, nbytes);
    return st;
}

/* ------------------------------------------------------------------------------------------
 * Library and pipelines, under pipeline_lock
 * ---------------------------------------------------------------------------------------- */

static tl_status compile_library(const char *op)
{
    NSError *err = nil;
    MTLCompileOptions *options = [MTLCompileOptions new];
    /* bfloat kernels need MSL 3.1; older systems compile the rest (kernels.metal checks). */
    if (@available(macOS 14.0, *))
        options.languageVersion = MTLLanguageVersion3_1;
    NSString *source = [[NSString alloc] initWithBytes:tl_metal_kernels_source
                                                length:tl_metal_kernels_source_len
                                              encoding:NSUTF8StringEncoding];
    library = [device newLibraryWithSource:source options:options error:&err];
    if (library)
        return TL_OK;
    return tl_fail(TL_ERR_BACKEND, "%s: metal: compiling the kernels failed: %s", op,
                   err ? err.localizedDescription.UTF8String : "no error given");
}

static MTLFunctionConstantValues *constants_of(const tlm_kernel *k)
{
    MTLFunctionConstantValues *values = [MTLFunctionConstantValues new];
    uint32_t op = k->op, aux = k->aux_dtype;
    bool contiguous = k->contiguous;
    [values setConstantValue:&op type:MTLDataTypeUInt atIndex:TLK_FC_OP];
    [values setConstantValue:&contiguous type:MTLDataTypeBool atIndex:TLK_FC_CONTIGUOUS];
    [values setConstantValue:&aux type:MTLDataTypeUInt atIndex:TLK_FC_AUX_DTYPE];
    return values;
}

static id<MTLComputePipelineState> new_pipeline(const char *op, const tlm_kernel *k)
{
    NSError *err = nil;
    if (!library && compile_library(op) != TL_OK)
        return nil;
    id<MTLFunction> fn = [library newFunctionWithName:@(k->name) constantValues:constants_of(k)
                                                error:&err];
    id<MTLComputePipelineState> p = fn ? [device newComputePipelineStateWithFunction:fn error:&err] : nil;
    if (!p)
        tl_fail(TL_ERR_BACKEND, "%s: metal: no pipeline for kernel %s: %s", op, k->name,
                err ? err.localizedDescription.UTF8String : "not in the library");
    return p;
}

static id<MTLComputePipelineState> pipeline_for(const char *op, const tlm_kernel *k)
{
    NSString *key = [NSString stringWithFormat:@"%s/%u/%d/%u", k->name, k->op, (int)k->contiguous,
                                               k->aux_dtype];
    pthread_mutex_lock(&pipeline_lock);
    id<MTLComputePipelineState> p = pipelines[key];
    if (!p) {
        p = new_pipeline(op, k);
        if (p)
            pipelines[key] = p;
    }
    pthread_mutex_unlock(&pipeline_lock);
    return p;
}

/* ------------------------------------------------------------------------------------------
 * Encoding one launch
 * ---------------------------------------------------------------------------------------- */

static tl_status unsupported(const tlm_request *req)
{
    const char *op = tlm_op_name(req->family, req->op);
    if (req->family == TLM_CAST)
        return tl_fail(TL_ERR_UNSUPPORTED, "no metal implementation for %s from %s to %s", op,
                       tl_dtype_name(req->dtype), tl_dtype_name(req->aux));
    return tl_fail(TL_ERR_UNSUPPORTED, "no metal implementation for %s on %s", op,
                   tl_dtype_name(req->dtype));
}

static bool grid_of(const tlm_launch *l, id<MTLComputePipelineState> p, tlm_grid *g)
{
    tlm_limits lim = {(uint32_t)p.maxTotalThreadsPerThreadgroup, (uint32_t)p.threadExecutionWidth};
    switch (l->grid) {
    case TLM_GRID_ELEMENTWISE: return tlm_grid_elementwise(l->n, lim, g);
    case TLM_GRID_ROWS: return tlm_grid_rows(l->n, l->row_len, lim, g);
    default: return tlm_grid_matmul(l->batch, l->m, l->cols, lim, g);
    }
}

static void encode_locked(const tlm_launch *l, id<MTLComputePipelineState> p, const tlm_grid *g)
{
    [encoder setComputePipelineState:p];
    [encoder setBytes:l->args length:l->args_size atIndex:0];
    for (size_t i = 0; i < l->nbufs; i++)
        [encoder setBuffer:(__bridge id<MTLBuffer>)l->bufs[i] offset:0 atIndex:i + 1];
    [encoder dispatchThreadgroups:MTLSizeMake(g->groups[0], g->groups[1], g->groups[2])
            threadsPerThreadgroup:MTLSizeMake(g->threads[0], g->threads[1], g->threads[2])];
}

tl_status tlm_metal_encode(const tlm_launch *l)
{
    tlm_kernel k;
    tlm_grid g;
    if (!tlm_select(&l->req, &k))
        return unsupported(&l->req);
    @autoreleasepool {
        id<MTLComputePipelineState> p = pipeline_for(l->op, &k);
        if (!p)
            return TL_ERR_BACKEND;
        if (!grid_of(l, p, &g))
            return tl_fail(TL_ERR_BACKEND, "%s: metal: kernel %s cannot run this size with its "
                           "pipeline limits", l->op, k.name);
        if (tlm_grid_empty(&g))
            return TL_OK;
        const void *const *bufs = (const void *const *)l->bufs;
        tl_status st = queue_status(l->op, tlm_queue_begin(&commands, bufs, l->nreads,
                                                           bufs + l->nreads, l->nbufs - l->nreads));
        if (st != TL_OK)
            return st;
        encode_locked(l, p, &g);
        return queue_status(l->op, tlm_queue_end(&commands));
    }
}

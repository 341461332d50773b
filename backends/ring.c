/*
 * ring: the always-on flight recorder. A fixed byte budget is mapped and
 * touched at init; when no unused block is left, the oldest retired block
 * (full, or left by an exited thread) is handed over and its events are
 * counted as overwritten. A block a thread is still writing is never taken.
 */
#include "recorder/recorder.h"

static int ring_start(struct tl_recorder *rec, const tl_options *opts)
{
	return tl_pool_init(&rec->pool, rec->buffer_bytes, opts->block_bytes,
			    TL_POOL_PREFAULT | TL_POOL_REUSE_OLDEST);
}

const struct tl_recorder_ops tl_ring_ops = {
	.name = "ring",
	.kind = TL_RECORDER_RING,
	.default_bytes = 1024 * 1024,
	.start = ring_start,
	.stop = tl_pool_recorder_stop,
	.next_block = tl_pool_recorder_next_block,
	.retire_block = tl_pool_recorder_retire,
	.blocks = tl_pool_recorder_blocks,
	.fork_prepare = tl_pool_recorder_fork_prepare,
	.fork_parent = tl_pool_recorder_fork_parent,
	.after_fork_child = tl_pool_recorder_fork_child,
};

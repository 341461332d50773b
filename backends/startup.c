/*
 * startup: the first events of a process. A fixed budget is mapped and
 * touched at init; when a thread needs a block and none is left, recording
 * stops for every thread (later events are dropped and counted), so the
 * buffer holds a clean prefix of the run.
 */
#include "recorder/recorder.h"

static int startup_start(struct tl_recorder *rec, const tl_options *opts)
{
	return tl_pool_init(&rec->pool, rec->buffer_bytes, opts->block_bytes, TL_POOL_PREFAULT);
}

static struct tl_block *startup_next_block(struct tl_recorder *rec, struct tl_slot *slot)
{
	struct tl_block *block = tl_pool_recorder_next_block(rec, slot);
	if (!block)
		tl_recorder_mark_full();
	return block;
}

const struct tl_recorder_ops tl_startup_ops = {
	.name = "startup",
	.kind = TL_RECORDER_STARTUP,
	.default_bytes = 1024 * 1024,
	.start = startup_start,
	.stop = tl_pool_recorder_stop,
	.next_block = startup_next_block,
	.retire_block = tl_pool_recorder_retire,
	.blocks = tl_pool_recorder_blocks,
	.fork_prepare = tl_pool_recorder_fork_prepare,
	.fork_parent = tl_pool_recorder_fork_parent,
	.after_fork_child = tl_pool_recorder_fork_child,
};

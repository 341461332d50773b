/*
 * endless: keeps everything up to a hard cap (default 256 MiB). The cap is
 * reserved as address space at init and backed by memory only as blocks
 * are used, so nothing is allocated on the recording path; once every block
 * is used, new events are dropped and counted.
 */
#include "recorder/recorder.h"

static int endless_start(struct tl_recorder *rec, const tl_options *opts)
{
	return tl_pool_init(&rec->pool, rec->buffer_bytes, opts->block_bytes, 0);
}

const struct tl_recorder_ops tl_endless_ops = {
	.name = "endless",
	.kind = TL_RECORDER_ENDLESS,
	.default_bytes = 256u * 1024 * 1024,
	.start = endless_start,
	.stop = tl_pool_recorder_stop,
	.next_block = tl_pool_recorder_next_block,
	.retire_block = tl_pool_recorder_retire,
	.blocks = tl_pool_recorder_blocks,
	.fork_prepare = tl_pool_recorder_fork_prepare,
	.fork_parent = tl_pool_recorder_fork_parent,
	.after_fork_child = tl_pool_recorder_fork_child,
};

/*
 * The call tree of a slow dispatch: rebuilt from the begin/end nesting of
 * the records its thread wrote, siblings of the same name merged (their
 * count kept), trimmed, and written as indented text and as JSON, with a
 * stack key naming where the time went.
 *
 * Trimming: nodes shorter than tree_min_node_ns go, then the shortest
 * leaves until at most tree_max_nodes remain (the root always stays). A
 * node's self time is its total minus the totals of the children kept.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/tracer.h"
#include "tracers/looper_internal.h"

/* The part of the cost the node chosen as stack key holds at least. */
#define STACK_KEY_SHARE_PERCENT 30

struct node {
	char *name;
	int64_t total_ns;
	uint64_t count;
	int64_t open_ns; /* start of the current occurrence */
	struct node *parent;
	struct node *child, *last, *sibling; /* children in first-seen order */
};

static struct node *node_new(struct node *parent, const char *name, size_t len)
{
	struct node *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->name = strndup(name, len);
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->parent = parent;
	if (parent) {
		if (parent->last)
			parent->last->sibling = n;
		else
			parent->child = n;
		parent->last = n;
	}
	return n;
}

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->sibling;
		node_free(n->child);
		free(n->name);
		free(n);
		n = next;
	}
}

/* The child of parent with this name, created when missing. */
static struct node *child_named(struct node *parent, const char *name, size_t len)
{
	for (struct node *c = parent->child; c; c = c->sibling)
		if (strlen(c->name) == len && memcmp(c->name, name, len) == 0)
			return c;
	return node_new(parent, name, len);
}

static void unlink_child(struct node *parent, struct node *n)
{
	struct node **p = &parent->child, *prev = NULL;
	while (*p != n) {
		prev = *p;
		p = &(*p)->sibling;
	}
	*p = n->sibling;
	if (parent->last == n)
		parent->last = prev;
	n->sibling = NULL;
	node_free(n);
}

static void drop_short(struct node *n, int64_t min_ns)
{
	struct node *c = n->child;
	while (c) {
		struct node *next = c->sibling;
		if (c->total_ns < min_ns)
			unlink_child(n, c);
		else
			drop_short(c, min_ns);
		c = next;
	}
}

static size_t count_nodes(const struct node *n)
{
	size_t k = 0;
	for (; n; n = n->sibling)
		k += 1 + count_nodes(n->child);
	return k;
}

/* The shortest leaf under n (n excluded); the latest of equals. */
static void shortest_leaf(struct node *n, struct node **best)
{
	for (struct node *c = n->child; c; c = c->sibling) {
		if (!c->child) {
			if (!*best || c->total_ns <= (*best)->total_ns)
				*best = c;
		} else {
			shortest_leaf(c, best);
		}
	}
}

static void trim(struct node *root, int64_t min_ns, size_t max_nodes)
{
	drop_short(root, min_ns);
	if (max_nodes == 0)
		max_nodes = 1;
	size_t k = count_nodes(root);
	while (k > max_nodes) {
		struct node *leaf = NULL;
		shortest_leaf(root, &leaf);
		if (!leaf)
			break;
		unlink_child(leaf->parent, leaf);
		k--;
	}
}

static int64_t self_ns(const struct node *n)
{
	int64_t self = n->total_ns;
	for (const struct node *c = n->child; c; c = c->sibling)
		self -= c->total_ns;
	return self > 0 ? self : 0;
}

static void write_text(struct looper_buf *b, const struct node *n, unsigned depth)
{
	for (; n; n = n->sibling) {
		for (unsigned i = 0; i < depth; i++)
			looper_buf_str(b, "  ");
		looper_buf_printf(b, "%s total=%.3fms self=%.3fms count=%llu\n", n->name,
		                  (double)n->total_ns / 1e6, (double)self_ns(n) / 1e6,
		                  (unsigned long long)n->count);
		write_text(b, n->child, depth + 1);
	}
}

static void write_json(struct looper_buf *b, const struct node *n)
{
	looper_buf_str(b, "[");
	for (const struct node *c = n; c; c = c->sibling) {
		looper_buf_str(b, c == n ? "{\"name\":" : ",{\"name\":");
		looper_buf_json_string(b, c->name);
		looper_buf_printf(
		    b, ",\"total_ns\":%lld,\"self_ns\":%lld,\"count\":%llu,\"children\":",
		    (long long)c->total_ns, (long long)self_ns(c), (unsigned long long)c->count);
		write_json(b, c->child);
		looper_buf_str(b, "}");
	}
	looper_buf_str(b, "]");
}

/* Path of names from the root to the deepest node holding the share. */
static void write_key(struct looper_buf *b, const struct node *root)
{
	int64_t need = root->total_ns * STACK_KEY_SHARE_PERCENT / 100;
	const struct node *n = root;
	looper_buf_str(b, n->name);
	for (;;) {
		const struct node *best = NULL;
		for (const struct node *c = n->child; c; c = c->sibling)
			if (c->total_ns >= need && (!best || c->total_ns > best->total_ns))
				best = c;
		if (!best)
			break;
		n = best;
		looper_buf_str(b, ";");
		looper_buf_str(b, n->name);
	}
}

void looper_tree_build(const struct tl_looper *l, const uint64_t *words, size_t nwords,
                       bool skip_first, bool skip_last, const char *root_name, int64_t begin_ns,
                       int64_t end_ns, struct looper_tree_result *out)
{
	memset(out, 0, sizeof *out);
	struct node *root = node_new(NULL, root_name, strlen(root_name));
	if (!root)
		return;
	root->total_ns = end_ns - begin_ns;
	root->count = 1;

	/* the records, in order: their count first, to know the last one, and
	 * their timestamps (a COMPLETE's end too), converted together */
	size_t nrecords = 0, ntimes = 0, room = 0;
	tl_timestamp *times = NULL;
	for (size_t at = 0, len; at < nwords; at += len) {
		tl_record_view v;
		if ((len = tl_record_decode(words + at, nwords - at, &v)) == 0)
			break;
		if (room - ntimes < 2) {
			room = room ? 2 * room : 1024;
			tl_timestamp *grown = realloc(times, room * sizeof *times);
			if (!grown) {
				free(times);
				node_free(root);
				return;
			}
			times = grown;
		}
		nrecords++;
		times[ntimes++] = v.ts;
		if (v.phase == TL_PHASE_COMPLETE)
			times[ntimes++] = v.value;
	}
	tl_timestamps_to_ns(times, (int64_t *)times, ntimes);
	const int64_t *ns = (const int64_t *)times;
	struct node *top = root;
	size_t index = 0;
	for (size_t at = 0, len; at < nwords; at += len, index++) {
		tl_record_view v;
		if ((len = tl_record_decode(words + at, nwords - at, &v)) == 0)
			break;
		int64_t ts = *ns++;
		int64_t end = v.phase == TL_PHASE_COMPLETE ? *ns++ : 0;
		if ((skip_first && index == 0) || (skip_last && index + 1 == nrecords))
			continue;
		char numbered[TL_RECORD_NAME_MAX];
		size_t name_len;
		const char *name = tl_record_name(&v, numbered, &name_len);
		const char *symbol; /* a function's name, resolved here (not a handler) */
		if ((symbol = tl_tracer_record_function_name(&v)) != NULL) {
			name = symbol;
			name_len = strlen(symbol);
		}
		if (v.phase == TL_PHASE_BEGIN) {
			struct node *n = child_named(top, name, name_len);
			if (!n)
				break;
			n->count++;
			n->open_ns = ts;
			top = n;
			out->events++;
		} else if (v.phase == TL_PHASE_END) {
			if (top != root) {
				top->total_ns += ts - top->open_ns;
				top = top->parent;
			}
			out->events++;
		} else if (v.phase == TL_PHASE_COMPLETE) {
			struct node *n = child_named(top, name, name_len);
			if (!n)
				break;
			n->count++;
			n->total_ns += end - ts;
			out->events++;
		}
	}
	/* slices still open when the dispatch ended */
	for (; top != root; top = top->parent)
		top->total_ns += end_ns - top->open_ns;

	free(times);

	trim(root, l->tree_min_node_ns, l->tree_max_nodes);
	write_text(&out->text, root, 0);
	write_json(&out->json, root);
	write_key(&out->key, root);
	node_free(root);
}

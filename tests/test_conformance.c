/*
 * Every case of the shared conformance directory, one cmocka test each,
 * compared with its .expected under the directory README's rules:
 * `# compare:` groups of kinds matched as multisets on their asserted keys,
 * `~` keys and `~` items soft (printed as "derived", never failing), keys
 * missing from a line not compared, +-1 ns on ts/dur for systrace cases,
 * marker cases line by line (through `timeline slices --markers`).
 */
#include "support/test_support.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/readers/import_print.h"
#include "tools/readers/trace_import.h"

/* What each case prints: every kind. */
#define CASE_KINDS                                                                                 \
	(TL_PRINT_DEFAULT | TL_PRINT_ARG | TL_PRINT_PROCESS | TL_PRINT_THREAD | TL_PRINT_STAT)

#define MAX_KEYS 24
#define MAX_GROUPS 4

typedef struct item_key {
	char key[32];
	char *value; /* decoded string, or the bare token */
	int derived;
} item_key;

typedef struct item {
	char kind[16];
	int derived;
	size_t nkeys;
	item_key keys[MAX_KEYS];
	char *line;
} item;

typedef struct item_list {
	item *items;
	size_t n, cap;
} item_list;

typedef struct conformance_case {
	char name[128];
	char input[1024];
	char expected[1024];
} conformance_case;

typedef struct group {
	char kinds[8][16];
	size_t nkinds;
} group;

/* ------------------------------------------------------------------------ */
/* Parsing item lines */

/* A JSON string at *p (past the opening quote) into a malloc'd string. */
static char *decode_quoted(const char **p)
{
	const char *s = *p;
	size_t cap = strlen(s) + 1, n = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	while (*s && *s != '"') {
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			out[n++] = '\n';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 'u': {
			unsigned cp =
			    (unsigned)strtoul((char[5]){s[1], s[2], s[3], s[4], 0}, NULL, 16);
			out[n++] = (char)cp; /* the expected files only escape ASCII */
			s += 4;
			break;
		}
		default:
			out[n++] = *s;
			break;
		}
		if (*s)
			s++;
	}
	out[n] = '\0';
	*p = *s ? s + 1 : s;
	return out;
}

static int parse_item(const char *line, item *it)
{
	memset(it, 0, sizeof *it);
	const char *p = line;
	if (*p == '~') {
		it->derived = 1;
		p++;
	}
	size_t k = strcspn(p, " ");
	if (k == 0 || k >= sizeof it->kind)
		return -1;
	memcpy(it->kind, p, k);
	p += k;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (it->nkeys == MAX_KEYS)
			return -1;
		item_key *key = &it->keys[it->nkeys++];
		if (*p == '~') {
			key->derived = 1;
			p++;
		}
		size_t klen = strcspn(p, "=");
		if (!p[klen] || klen >= sizeof key->key)
			return -1;
		memcpy(key->key, p, klen);
		p += klen + 1;
		if (*p == '"') {
			p++;
			key->value = decode_quoted(&p);
		} else {
			size_t vlen = strcspn(p, " ");
			key->value = strndup(p, vlen);
			p += vlen;
		}
	}
	it->line = strdup(line);
	return 0;
}

static void free_items(item_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		for (size_t k = 0; k < list->items[i].nkeys; k++)
			free(list->items[i].keys[k].value);
		free(list->items[i].line);
	}
	free(list->items);
	memset(list, 0, sizeof *list);
}

static void add_line(item_list *list, const char *line)
{
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 32;
		list->items = realloc(list->items, list->cap * sizeof *list->items);
		assert_non_null(list->items);
	}
	if (parse_item(line, &list->items[list->n]) == 0)
		list->n++;
	else
		fail_msg("unparseable item line: %s", line);
}

static const char *find_key(const item *it, const char *key)
{
	for (size_t k = 0; k < it->nkeys; k++) {
		if (strcmp(it->keys[k].key, key) == 0)
			return it->keys[k].value;
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Comparing */

static int values_equal(const char *key, const char *want, const char *got, int tolerance)
{
	if (strcmp(want, got) == 0)
		return 1;
	char *end1, *end2;
	double a = strtod(want, &end1), b = strtod(got, &end2);
	if (*want && *got && !*end1 && !*end2) {
		if (a == b)
			return 1;
		if (tolerance && (strcmp(key, "ts") == 0 || strcmp(key, "dur") == 0)) {
			long long x = strtoll(want, NULL, 10), y = strtoll(got, NULL, 10);
			return x - y <= 1 && y - x <= 1;
		}
	}
	return 0;
}

/* Whether got has every key of want (derived keys only when with_derived). */
static int item_matches(const item *want, const item *got, int with_derived, int tolerance)
{
	if (strcmp(want->kind, got->kind) != 0)
		return 0;
	for (size_t k = 0; k < want->nkeys; k++) {
		const item_key *key = &want->keys[k];
		if (key->derived && !with_derived)
			continue;
		const char *value = find_key(got, key->key);
		if (!value || !values_equal(key->key, key->value, value, tolerance))
			return 0;
	}
	return 1;
}

static void report_derived(const char *name, const item *want, const item *got, int tolerance)
{
	for (size_t k = 0; k < want->nkeys; k++) {
		const item_key *key = &want->keys[k];
		const char *value = find_key(got, key->key);
		if (!value || !values_equal(key->key, key->value, value, tolerance))
			printf("derived: %s: %s: %s expected %s, got %s\n", name, want->line,
			       key->key, key->value, value ? value : "(absent)");
	}
}

static int in_group(const group *g, const char *kind)
{
	for (size_t i = 0; i < g->nkinds; i++) {
		if (strcmp(g->kinds[i], kind) == 0)
			return 1;
	}
	return 0;
}

static size_t parse_groups(const char *header, group *groups)
{
	size_t n = 0;
	const char *p = header;
	while ((p = strstr(p, "kinds=")) != NULL && n < MAX_GROUPS) {
		p += 6;
		group *g = &groups[n++];
		memset(g, 0, sizeof *g);
		while (*p && *p != ' ' && *p != ';' && g->nkinds < 8) {
			size_t len = strcspn(p, ", ;");
			snprintf(g->kinds[g->nkinds++], sizeof g->kinds[0], "%.*s", (int)len, p);
			p += len;
			if (*p == ',')
				p++;
		}
	}
	return n;
}

/* Returns the number of failures, each printed. */
static int compare_group(const char *name, const group *g, const item_list *want,
                         const item_list *got, int tolerance)
{
	int failures = 0;
	if (in_group(g, "count")) {
		for (size_t i = 0; i < want->n; i++) {
			const item *w = &want->items[i];
			if (strcmp(w->kind, "count") != 0 || w->derived)
				continue;
			const char *kind = find_key(w, "kind"), *wname = find_key(w, "name");
			long n = strtol(find_key(w, "n") ? find_key(w, "n") : "-1", NULL, 10);
			long have = 0;
			for (size_t j = 0; j < got->n; j++) {
				const item *it = &got->items[j];
				const char *iname = find_key(it, "name");
				if (kind && strcmp(it->kind, kind) == 0 &&
				    (!wname || (iname && strcmp(iname, wname) == 0)))
					have++;
			}
			if (have != n) {
				printf("FAIL: %s: %s: found %ld\n", name, w->line, have);
				failures++;
			}
		}
		return failures;
	}

	int *used = calloc(got->n + 1, sizeof *used);
	assert_non_null(used);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < want->n; i++) {
			const item *w = &want->items[i];
			if (!in_group(g, w->kind) || w->derived != pass)
				continue;
			size_t j = 0;
			/* Asserted items: on their asserted keys; derived items: on all. */
			for (; j < got->n; j++) {
				if (!used[j] && item_matches(w, &got->items[j], pass, tolerance))
					break;
			}
			if (j == got->n && pass == 1) {
				for (j = 0; j < got->n; j++) {
					const char *a = find_key(w, "name"),
					           *b = find_key(&got->items[j], "name");
					if (!used[j] && strcmp(w->kind, got->items[j].kind) == 0 &&
					    a && b && strcmp(a, b) == 0)
						break;
				}
			}
			if (j == got->n) {
				if (pass == 0) {
					printf("FAIL: %s: expected item not found: %s\n", name,
					       w->line);
					failures++;
				} else {
					printf("derived: %s: item not produced: %s\n", name,
					       w->line);
				}
				continue;
			}
			used[j] = 1;
			report_derived(name, w, &got->items[j], tolerance);
		}
	}
	for (size_t j = 0; j < got->n; j++) {
		if (!used[j] && in_group(g, got->items[j].kind)) {
			printf("FAIL: %s: unexpected item: %s\n", name, got->items[j].line);
			failures++;
		}
	}
	free(used);
	return failures;
}

/* Derived items of kinds no group compares: soft checks by name. */
static void compare_leftover_derived(const char *name, const group *groups, size_t ngroups,
                                     const item_list *want, const item_list *got, int tolerance)
{
	for (size_t i = 0; i < want->n; i++) {
		const item *w = &want->items[i];
		int grouped = 0;
		for (size_t g = 0; g < ngroups; g++)
			grouped |= in_group(&groups[g], w->kind);
		if (grouped || !w->derived || strcmp(w->kind, "count") == 0)
			continue;
		const char *wname = find_key(w, "name");
		for (size_t j = 0; j < got->n; j++) {
			const item *it = &got->items[j];
			const char *iname = find_key(it, "name");
			if (strcmp(it->kind, w->kind) == 0 && wname && iname &&
			    strcmp(wname, iname) == 0) {
				report_derived(name, w, it, tolerance);
				break;
			}
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Running a case */

static void split_lines(char *text, item_list *items, char **compare, char **format)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# compare:", 10) == 0 && compare)
			*compare = line;
		else if (strncmp(line, "# input-format:", 15) == 0 && format)
			*format = line + 15;
		if (line[0] == '#' || !line[0])
			continue;
		add_line(items, line);
	}
}

static void run_marker_case(const conformance_case *c, const char *expected_text)
{
	const char *cli = tl_test_cli();
	if (!cli) {
		print_message("no timeline CLI (TIMELINE_CLI unset): marker case not run\n");
		skip();
	}
	const char *out = tl_test_path(c->name, ".out");
	assert_int_equal(tl_test_run("'%s' slices --markers '%s' > '%s'", cli, c->input, out), 0);
	char *got = tl_test_read_file(out, NULL);
	assert_non_null(got);
	char *want = strdup(expected_text);
	char *save1 = NULL, *save2 = NULL;
	char *w = strtok_r(want, "\n", &save1);
	char *g = strtok_r(got, "\n", &save2);
	size_t n = 0;
	int failures = 0;
	for (;; w = strtok_r(NULL, "\n", &save1)) {
		while (w && w[0] == '#')
			w = strtok_r(NULL, "\n", &save1);
		if (!w)
			break;
		n++;
		if (!g) {
			printf("FAIL: %s: line %zu: expected %s, got nothing\n", c->name, n, w);
			failures++;
			break;
		}
		item iw, ig;
		assert_int_equal(parse_item(w, &iw), 0);
		assert_int_equal(parse_item(g, &ig), 0);
		if (!item_matches(&iw, &ig, 1, 0) || !item_matches(&ig, &iw, 1, 0)) {
			printf("FAIL: %s: line %zu: expected %s, got %s\n", c->name, n, w, g);
			failures++;
		}
		for (size_t k = 0; k < iw.nkeys; k++)
			free(iw.keys[k].value);
		for (size_t k = 0; k < ig.nkeys; k++)
			free(ig.keys[k].value);
		free(iw.line);
		free(ig.line);
		g = strtok_r(NULL, "\n", &save2);
	}
	if (g) {
		printf("FAIL: %s: extra output line: %s\n", c->name, g);
		failures++;
	}
	free(want);
	free(got);
	if (failures)
		fail_msg("%s: %d line(s) differ", c->name, failures);
}

/* The case read with `timeline slices`' printer, which is handed the
 * items as the import goes (tl_import_read_file_to): the same bytes. */
static void assert_prints_the_same_streamed(const conformance_case *c, const char *whole)
{
	tl_import_printer *p = tl_import_printer_new(CASE_KINDS);
	assert_non_null(p);
	tl_import imp;
	tl_read_error err = {0};
	int rc =
	    tl_import_read_file_to(c->input, tl_import_printer_sink(p), NULL, &imp, NULL, &err);
	if (rc)
		fail_msg("%s: streamed import failed (%d): %s", c->name, rc, err.message);
	char *printed = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&printed, &len);
	assert_non_null(mem);
	assert_int_equal(tl_import_printer_write(p, &imp, NULL, mem), 0);
	fclose(mem);
	tl_import_free(&imp);
	tl_import_printer_free(p);
	if (strcmp(printed, whole) != 0)
		fail_msg("%s: printed streamed:\n%s\nwhole:\n%s", c->name, printed, whole);
	free(printed);
}

static void test_conformance_case(void **state)
{
	const conformance_case *c = *state;
	char *expected = tl_test_read_file(c->expected, NULL);
	assert_non_null(expected);
	if (strstr(expected, "# input-format: marker")) {
		run_marker_case(c, expected);
		free(expected);
		return;
	}

	tl_import imp;
	tl_read_error err = {0};
	int rc = tl_import_read_file(c->input, &imp, NULL, &err);
	if (rc)
		fail_msg("%s: import failed (%d): %zu:%zu: %s", c->name, rc, err.line, err.column,
		         err.message);
	char *printed = NULL;
	size_t printed_len = 0;
	FILE *mem = open_memstream(&printed, &printed_len);
	assert_non_null(mem);
	tl_import_print(&imp, CASE_KINDS, mem);
	fclose(mem);
	tl_import_free(&imp);
	assert_prints_the_same_streamed(c, printed);

	item_list want = {0}, got = {0};
	char *compare = NULL, *format = NULL;
	split_lines(expected, &want, &compare, &format);
	split_lines(printed, &got, NULL, NULL);
	int tolerance = format && strstr(format, "systrace") != NULL;
	group groups[MAX_GROUPS];
	size_t ngroups = compare ? parse_groups(compare, groups) : 0;
	int failures = 0;
	for (size_t g = 0; g < ngroups; g++)
		failures += compare_group(c->name, &groups[g], &want, &got, tolerance);
	compare_leftover_derived(c->name, groups, ngroups, &want, &got, tolerance);
	if (!ngroups) {
		printf("FAIL: %s: no '# compare:' header\n", c->name);
		failures++;
	}
	free_items(&want);
	free_items(&got);
	free(printed);
	free(expected);
	if (failures)
		fail_msg("%s: %d failure(s)", c->name, failures);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(((const conformance_case *)a)->name, ((const conformance_case *)b)->name);
}

int main(void)
{
	const char *dir = TL_SHARED_DIR "/conformance";
	DIR *d = opendir(dir);
	if (!d) {
		printf("skipped: no conformance directory at %s (%s)\n", dir, strerror(errno));
		return TL_TEST_SKIP_EXIT;
	}
	conformance_case *cases = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		const char *suffix = ".expected";
		if (len <= strlen(suffix) || strcmp(de->d_name + len - strlen(suffix), suffix) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			cases = realloc(cases, cap * sizeof *cases);
			if (!cases)
				return 1;
		}
		conformance_case *c = &cases[n++];
		snprintf(c->name, sizeof c->name, "%.*s", (int)(len - strlen(suffix)), de->d_name);
		snprintf(c->expected, sizeof c->expected, "%s/%s", dir, de->d_name);
		snprintf(c->input, sizeof c->input, "%s/%s.input", dir, c->name);
	}
	closedir(d);
	if (!n) {
		printf("skipped: no .expected files in %s\n", dir);
		free(cases);
		return TL_TEST_SKIP_EXIT;
	}
	qsort(cases, n, sizeof *cases, compare_names);
	struct CMUnitTest *tests = calloc(n, sizeof *tests);
	if (!tests)
		return 1;
	for (size_t i = 0; i < n; i++) {
		tests[i].name = cases[i].name;
		tests[i].test_func = test_conformance_case;
		tests[i].initial_state = &cases[i];
	}
	int failed = _cmocka_run_group_tests("conformance", tests, n, NULL, NULL);
	free(tests);
	free(cases);
	return failed;
}

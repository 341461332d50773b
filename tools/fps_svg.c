/*
 * `timeline fps --plot`: a plain SVG chart, one panel per series. Each
 * frame is a bar (or, past MAX_BARS frames, a point of a line) of its frame
 * time; dashed lines mark 1, 2 and 3 refresh periods. Bars within 1.5
 * periods are blue, up to 2.5 orange, longer ones red; values above the
 * panel are drawn to its top with a red cap.
 */
#include "tools/fps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "recorder/atomic_file.h"

#define WIDTH 960
#define PANEL_HEIGHT 280
#define MARGIN_LEFT 70
#define MARGIN_RIGHT 90
#define MARGIN_TOP 52
#define MARGIN_BOTTOM 40
#define MAX_BARS 600
/* The panel shows at least 3.5 periods and at most this many. */
#define MAX_PERIODS_SHOWN 8.0

#define COLOR_OK "#3b78c2"
#define COLOR_LATE "#e8912d"
#define COLOR_JANK "#d03b3b"

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

static const char *bar_color(double periods)
{
	if (periods <= 1.5)
		return COLOR_OK;
	if (periods <= 2.5)
		return COLOR_LATE;
	return COLOR_JANK;
}

static void panel(FILE *f, const fps_series *s, double top)
{
	const double plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
	const double plot_h = PANEL_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM;
	const double x0 = MARGIN_LEFT, y0 = top + MARGIN_TOP + plot_h; /* bottom-left */
	double period_ms = s->stats.period_ns > 0 ? s->stats.period_ns / 1e6 : 16.667;
	double max_ms = 0;
	for (size_t i = 0; i < s->nchart; i++)
		if (s->chart_ns[i] / 1e6 > max_ms)
			max_ms = s->chart_ns[i] / 1e6;
	double ymax = max_ms * 1.1;
	if (ymax < 3.5 * period_ms)
		ymax = 3.5 * period_ms;
	if (ymax > MAX_PERIODS_SHOWN * period_ms)
		ymax = MAX_PERIODS_SHOWN * period_ms;

	fprintf(f, "<g>\n<text x=\"%d\" y=\"%.1f\" class=\"title\">", MARGIN_LEFT, top + 22);
	xml_text(f, s->label);
	fprintf(f,
	        "</text>\n<text x=\"%d\" y=\"%.1f\" class=\"sub\">%zu frames, %.2f fps, "
	        "jank %llu, max frame delay %lld periods, period %.2f ms%s</text>\n",
	        MARGIN_LEFT, top + 40, s->stats.frames, s->stats.fps,
	        (unsigned long long)s->stats.jank_count, (long long)s->stats.max_frame_delay,
	        period_ms, s->period_estimated ? " (estimated)" : "");
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"plot\"/>\n",
	        x0, top + MARGIN_TOP, plot_w, plot_h);

	double step = s->nchart ? plot_w / (double)s->nchart : plot_w;
	if (s->nchart <= MAX_BARS) {
		double bar_w = step > 2 ? step * 0.8 : step;
		for (size_t i = 0; i < s->nchart; i++) {
			double ms = s->chart_ns[i] / 1e6;
			double shown = ms > ymax ? ymax : ms;
			double h = shown / ymax * plot_h;
			fprintf(f,
			        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
			        "fill=\"%s\"><title>frame %zu: %.3f ms</title></rect>\n",
			        x0 + step * (double)i + (step - bar_w) / 2, y0 - h, bar_w, h,
			        bar_color(ms / period_ms), i + 1, ms);
			if (ms > ymax)
				fprintf(f,
				        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"3\" "
				        "fill=\"%s\"/>\n",
				        x0 + step * (double)i + (step - bar_w) / 2, y0 - h - 3,
				        bar_w, COLOR_JANK);
			if (ms > ymax && s->nchart <= 60)
				fprintf(f,
				        "<text x=\"%.2f\" y=\"%.2f\" class=\"axis\" "
				        "text-anchor=\"middle\">%.1f</text>\n",
				        x0 + step * ((double)i + 0.5), y0 - h + 12, ms);
		}
	} else {
		fputs("<polyline class=\"line\" points=\"", f);
		for (size_t i = 0; i < s->nchart; i++) {
			double ms = s->chart_ns[i] / 1e6;
			double shown = ms > ymax ? ymax : ms;
			fprintf(f, "%.2f,%.2f ", x0 + step * ((double)i + 0.5),
			        y0 - shown / ymax * plot_h);
		}
		fputs("\"/>\n", f);
		for (size_t i = 0; i < s->nchart; i++) {
			double ms = s->chart_ns[i] / 1e6;
			if (ms / period_ms <= 1.5)
				continue;
			double shown = ms > ymax ? ymax : ms;
			fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
			        x0 + step * ((double)i + 0.5), y0 - shown / ymax * plot_h,
			        bar_color(ms / period_ms));
		}
	}

	/* period lines and the y axis */
	for (int k = 1; k <= 3; k++) {
		double y = y0 - k * period_ms / ymax * plot_h;
		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" class=\"period\"/>\n"
		        "<text x=\"%.1f\" y=\"%.2f\" class=\"plabel\">%d&#215; %.2f ms</text>\n",
		        x0, y, x0 + plot_w, y, x0 + plot_w + 6, y + 4, k, k * period_ms);
	}
	fprintf(f,
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">0</text>\n"
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%.1f</text>\n",
	        x0 - 6, y0 + 4, x0 - 6, top + MARGIN_TOP + 4, ymax);
	fprintf(f,
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"middle\" "
	        "transform=\"rotate(-90 %.1f %.1f)\">%s (ms)</text>\n",
	        x0 - 40, top + MARGIN_TOP + plot_h / 2, x0 - 40, top + MARGIN_TOP + plot_h / 2,
	        s->from_trace ? "frame time" : "present interval");
	fprintf(f,
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\">1</text>\n"
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"end\">%zu</text>\n"
	        "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"middle\">frame</text>\n"
	        "</g>\n",
	        x0, y0 + 16, x0 + plot_w, y0 + 16, s->nchart, x0 + plot_w / 2, y0 + 30);
}

static int write_svg(int fd, void *ctx)
{
	const fps_series_list *list = ctx;
	int copy = dup(fd);
	FILE *f = copy >= 0 ? fdopen(copy, "w") : NULL;
	if (!f) {
		int rc = -errno;
		if (copy >= 0)
			close(copy);
		return rc;
	}
	errno = 0;
	int height = PANEL_HEIGHT * (int)(list->count ? list->count : 1);
	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
	        "<style>\n"
	        ".title{font-size:15px;font-weight:bold;fill:#222}\n"
	        ".sub{font-size:12px;fill:#555}\n"
	        ".axis{font-size:11px;fill:#444}\n"
	        ".plabel{font-size:11px;fill:#666}\n"
	        ".plot{fill:#fafafa;stroke:#bbb;stroke-width:1}\n"
	        ".period{stroke:#888;stroke-width:1;stroke-dasharray:5,4}\n"
	        ".line{fill:none;stroke:" COLOR_OK ";stroke-width:1.2}\n"
	        "</style>\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
	        WIDTH, height, WIDTH, height);
	for (size_t i = 0; i < list->count; i++)
		panel(f, &list->items[i], (double)PANEL_HEIGHT * (double)i);
	fputs("</svg>\n", f);
	/* errno: the last write that failed, if any */
	int rc = fflush(f) != 0 || ferror(f) ? -(errno ? errno : EIO) : 0;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

int fps_write_svg(const char *path, const fps_series_list *list)
{
	return tl_atomic_file_write(path, write_svg, (void *)list);
}

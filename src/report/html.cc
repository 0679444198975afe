#include "report/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "report/format.h"
#include "report/html_views.h"
#include "report/svg.h"

namespace trainprof::report {
namespace {

using svg::AppendEscaped;
using svg::Escaped;

// A word that is an absolute path ("/home/me/runs/trace.json:"): where it starts and ends,
// trailing punctuation left out. Found from `from`; npos when there is none.
std::pair<size_t, size_t> NextPath(std::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    if (text[i] != '/' || (i > 0 && text[i - 1] != ' ' && text[i - 1] != '(')) continue;
    size_t end = text.find_first_of(" \t\n", i);
    if (end == std::string_view::npos) end = text.size();
    while (end > i && std::string_view(":,;)").find(text[end - 1]) != std::string_view::npos) --end;
    const std::string_view path = text.substr(i, end - i);
    if (std::count(path.begin(), path.end(), '/') >= 2 && path.back() != '/') return {i, end};
  }
  return {std::string_view::npos, std::string_view::npos};
}

// `text` with each absolute path named by its last part, the whole path in a tooltip: a title
// or a diagnostic that starts with a long path scrolls sideways otherwise.
void AppendShortPaths(std::string& out, std::string_view text, bool markup) {
  size_t at = 0;
  while (true) {
    const auto [b, e] = NextPath(text, at);
    if (b == std::string_view::npos) break;
    AppendEscaped(out, text.substr(at, b - at));
    const std::string_view path = text.substr(b, e - b), name = path.substr(path.rfind('/') + 1);
    if (markup) {
      out += "<span class=\"path\" title=\"";
      AppendEscaped(out, path);
      out += "\">";
    }
    AppendEscaped(out, name);
    if (markup) out += "</span>";
    at = e;
  }
  AppendEscaped(out, text.substr(at));
}

constexpr const char* kStyle = R"css(
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#dadce0;--bg2:#f6f7f9;--warn:#b26a00;--err:#c5221f}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0}
header,nav,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header h1{font-size:22px;margin:18px 0 2px;overflow-wrap:anywhere}
.sub{color:var(--muted);margin:0 0 8px;overflow-wrap:anywhere}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding-top:6px;
 padding-bottom:6px;z-index:1}
nav{display:flex;flex-wrap:wrap;column-gap:14px;row-gap:2px}
nav a{color:#1a73e8;text-decoration:none;white-space:nowrap}
h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.findings ul{padding-left:0;list-style:none}
.findings li{padding:6px 10px;margin:4px 0;border-left:4px solid #1a73e8;background:var(--bg2)}
.findings li.warning{border-color:var(--warn)}
.findings li.error{border-color:var(--err)}
.findings .where{color:var(--muted);font-size:12px;margin-right:6px}
.findings .sev{font-size:11px;font-weight:700;text-transform:uppercase;margin-right:6px;
 color:#1a73e8}
.findings li.warning .sev{color:var(--warn)}.findings li.error .sev{color:var(--err)}
.metrics{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:8px;margin:8px 0}
.metric{background:var(--bg2);border-radius:6px;padding:8px 10px}
.metric .k{display:block;color:var(--muted);font-size:12px}
.metric .v{font-size:17px;font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}
figure{margin:6px 0;break-inside:avoid}
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
svg.chart{width:100%;height:auto;font-size:11px}
svg .grid{stroke:#ececec}svg .axis{stroke:#888}svg .frame{fill:none;stroke:#ccc}
svg .series{fill:none;stroke-width:1.5}svg .tick,svg .cat,svg .val{fill:#555}
svg .legend{fill:#333}svg .nodata{fill:#999;text-anchor:middle}
svg .peak circle{fill:#d62728}svg .peak text{fill:#d62728;font-weight:600}
svg .mark{fill:#d62728;font-size:12px}
.table-wrap{overflow-x:auto;margin:8px 0}
table.data{border-collapse:collapse;font-size:13px}
table.data caption{text-align:left;font-weight:600;padding:4px 0}
table.data th,table.data td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;
 white-space:nowrap}
table.data th{background:var(--bg2);cursor:pointer;user-select:none;position:relative}
table.data td:first-child,table.data th:first-child{position:sticky;left:0;background:#fff;
 box-shadow:1px 0 0 #eee}
table.data th:first-child{background:var(--bg2)}
table.data th[aria-sort=ascending]::after{content:" \25B2";font-size:9px}
table.data th[aria-sort=descending]::after{content:" \25BC";font-size:9px}
table.data .num{text-align:right;font-variant-numeric:tabular-nums}
table.data tfoot td{font-weight:600;border-top:1px solid #999}
table.data tr.highlight td{background:#fde2e1}
.note{color:var(--muted);font-size:12px;margin:2px 0}
details{margin:6px 0}summary{cursor:pointer;color:#1a73e8}
footer{color:var(--muted);font-size:12px;margin:30px auto 20px}
@media print{nav{display:none}body{font-size:11px}.charts{display:block}
 table.data th{cursor:auto}a{color:inherit}}
)css";

// Runs first: any script error or console.error lands in data-errors, which the browser test
// reads from the page.
constexpr const char* kErrorScript = R"js(
(function(){var e=[],d=document.documentElement;function add(m){e.push(String(m));
d.setAttribute('data-errors',e.join(' | '));}
window.addEventListener('error',function(ev){add(ev.message||'error');});
var ce=console.error;console.error=function(){add([].join.call(arguments,' '));
ce.apply(console,arguments);};})();
)js";

constexpr const char* kSortScript = R"js(
document.querySelectorAll('table.data').forEach(function(t){
 var hs=t.tHead?t.tHead.rows[0].cells:[];
 Array.prototype.forEach.call(hs,function(th,i){
  th.tabIndex=0;
  function sort(){
   var asc=th.getAttribute('aria-sort')!=='ascending',num=th.classList.contains('num');
   Array.prototype.forEach.call(hs,function(h){h.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',asc?'ascending':'descending');
   var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
   rows.sort(function(x,y){
    var p=x.cells[i],q=y.cells[i];
    if(num){var u=parseFloat(p.dataset.v),v=parseFloat(q.dataset.v);
     if(isNaN(u))return isNaN(v)?0:1;if(isNaN(v))return -1;return asc?u-v:v-u;}
    return asc?p.textContent.localeCompare(q.textContent):q.textContent.localeCompare(p.textContent);
   });
   rows.forEach(function(r){b.appendChild(r);});
  }
  th.addEventListener('click',sort);
  th.addEventListener('keydown',function(ev){if(ev.key==='Enter')sort();});
 });
});
document.documentElement.setAttribute('data-ready','charts='+
 document.querySelectorAll('svg.chart').length+' tables='+
 document.querySelectorAll('table.data').length);
)js";

bool IsNumeric(Unit u) { return u != Unit::kText && u != Unit::kBool; }

void Cell(std::string& out, const Value& v, Unit unit) {
  const bool num =
      IsNumeric(unit) && (std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v));
  if (num) {
    // Appended, not formatted through a back_inserter (a push_back per character): cells are
    // most of the page's bytes.
    out.append("<td class=\"num\" data-v=\"").append(FormatMachine(v)).append("\">");
  } else {
    out += IsNumeric(unit) ? "<td class=\"num\">" : "<td>";
  }
  if (const auto* text = std::get_if<std::string>(&v); text != nullptr && unit == Unit::kText) {
    AppendShortPaths(out, *text, true);
  } else {
    AppendEscaped(out, FormatHuman(v, unit));
  }
  out += "</td>";
}

void TableRows(std::string& out, const Table& t, const std::vector<std::vector<Value>>& rows,
               size_t limit, const std::set<size_t>& highlight, bool body) {
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    out += highlight.count(i) > 0 ? "<tr class=\"highlight\">" : "<tr>";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (!t.columns[c].in_terminal) continue;
      const Unit unit = t.CellUnit(c, body ? i : SIZE_MAX);
      Cell(out, c < rows[i].size() ? rows[i][c] : Value(), unit);
    }
    out += "</tr>";
  }
}

// A table whose rows are in its CSV only: its title, where the rows are, and its notes.
void RenderCsvOnlyTable(std::string& out, const Table& t) {
  out += "<details><summary>";
  AppendEscaped(out, t.title);
  fmt::format_to(std::back_inserter(out), " (rows in {}.csv)</summary>", Escaped(t.id));
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"note\">One or more rows per rank: too many for this page and "
                 "report.json, so they are in {}.csv only.</p>",
                 Escaped(t.id));
  for (const std::string& n : t.notes) {
    out += "<p class=\"note\">";
    AppendEscaped(out, n);
    out += "</p>";
  }
  out += "</details>";
}

// `rows`: how many the table has, of which `t.rows` holds at least the first kHtmlRowLimit (a
// table made for the page alone need not make the rows it does not show). `csv`: its rows are
// in <id>.csv too (else in report.json only), as the note on rows left out says.
void RenderTable(std::string& out, const Table& t, size_t rows, bool csv) {
  if (t.csv_only) return RenderCsvOnlyTable(out, t);
  const size_t shown = std::min(kHtmlRowLimit, rows);
  if (t.kind != TableKind::kTable) {
    out += "<details><summary>";
    AppendEscaped(out, t.title);
    if (shown < rows) {
      fmt::format_to(std::back_inserter(out), " (first {} of {} rows; all in {})", shown, rows,
                     csv ? Escaped(t.id) + ".csv" : "report.json");
    } else {
      fmt::format_to(std::back_inserter(out), " ({} rows)", rows);
    }
    out += "</summary>";
  }
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"table-wrap\"><table class=\"data\" data-table=\"{}\" "
                 "data-rows=\"{}\"><caption>",
                 Escaped(t.id), shown);
  AppendEscaped(out, t.title);
  out += "</caption><thead><tr>";
  for (const Column& c : t.columns) {
    if (!c.in_terminal) continue;
    out += IsNumeric(c.unit) ? "<th class=\"num\"" : "<th";
    fmt::format_to(std::back_inserter(out), " data-key=\"{}\">", Escaped(c.key));
    AppendEscaped(out, c.title);
    out += "</th>";
  }
  out += "</tr></thead><tbody>";
  TableRows(out, t, t.rows, shown, html::HighlightedRows(t), true);
  out += "</tbody>";
  if (!t.footer.empty()) {
    out += "<tfoot>";
    TableRows(out, t, t.footer, t.footer.size(), {}, false);
    out += "</tfoot>";
  }
  out += "</table></div>";
  if (t.kind == TableKind::kTable && shown < rows) {
    fmt::format_to(std::back_inserter(out),
                   "<p class=\"note\">The first {} of {} rows; all are in {}report.json.</p>",
                   shown, rows, csv ? Escaped(t.id) + ".csv and " : "");
  }
  for (const std::string& n : t.notes) {
    out += "<p class=\"note\">";
    AppendEscaped(out, n);
    out += "</p>";
  }
  if (t.kind != TableKind::kTable) out += "</details>";
}

void RenderTable(std::string& out, const Table& t) { RenderTable(out, t, t.rows.size(), true); }

void RenderFindings(std::string& out, const Report& r) {
  out +=
      "<section id=\"findings\" class=\"findings\" data-section=\"findings\">"
      "<h2>Findings and recommendations</h2>";
  size_t count = 0;
  std::string items;
  for (Severity sev : {Severity::kError, Severity::kWarning, Severity::kInfo}) {
    for (const Section& s : r.sections) {
      for (const Finding& f : s.findings) {
        if (f.severity != sev) continue;
        ++count;
        fmt::format_to(std::back_inserter(items),
                       "<li class=\"{0}\"><span class=\"sev\">{0}</span><span class=\"where\">",
                       SeverityName(sev));
        AppendEscaped(items, s.title);
        items += "</span>";
        AppendEscaped(items, f.text);
        items += "</li>";
      }
    }
  }
  if (count == 0) {
    out += "<p class=\"note\">No findings: nothing crossed a threshold.</p>";
  } else {
    out += "<ul>" + items + "</ul>";
  }
  if (!r.diagnostics.empty()) {
    Section d;
    Table& t = d.AddTable("diagnostics", "Input and recording diagnostics",
                          {{"severity", "Severity"},
                           {"name", "Name"},
                           {"count", "Count", Unit::kCount},
                           {"message", "Message"}});
    for (const Diagnostic& g : r.diagnostics)
      t.rows.push_back({std::string(SeverityName(SeverityFor(g.severity()))), std::string(g.name()),
                        g.count, g.message});
    RenderTable(out, t);
  }
  out += "</section>";
}

// A section with nothing but findings (analyze's Recommendations): its findings are listed at the
// top of the page, so it gets neither a heading nor a link of its own.
bool OnlyFindings(const Section& s) {
  return s.notes.empty() && s.metrics.empty() && s.tables.empty() && html::SectionCharts(s).empty();
}

// Appends the section to `out`, which is written to `sink` and emptied after each chart and
// table, so a section of 1,000 ranks' rows is never held whole.
void RenderSection(std::string& out, const Section& s, std::ostream& sink) {
  auto flush = [&] {
    sink << out;
    out.clear();
  };
  fmt::format_to(std::back_inserter(out),
                 "<section class=\"report-section\" id=\"s-{0}\" data-section=\"{0}\"><h2>",
                 Escaped(s.id));
  AppendEscaped(out, s.title);
  out += "</h2>";
  if (!s.no_data.empty()) {
    out += "<p class=\"note\">";
    AppendEscaped(out, s.no_data);
    out += "</p></section>";
    return;
  }
  for (const std::string& n : s.notes) {
    out += "<p class=\"note\">";
    AppendEscaped(out, n);
    out += "</p>";
  }
  if (!s.metrics.empty()) {
    out += "<div class=\"metrics\">";
    for (const Metric& m : s.metrics) {
      fmt::format_to(std::back_inserter(out), "<div class=\"metric\" data-metric=\"{}\">",
                     Escaped(m.key));
      out += "<span class=\"k\">";
      AppendEscaped(out, m.title);
      out += "</span><span class=\"v\">";
      AppendEscaped(out, FormatHuman(m.value, m.unit));
      if (!m.suffix.empty() && !std::holds_alternative<std::monostate>(m.value)) {
        out += ' ';
        AppendEscaped(out, m.suffix);
      }
      out += "</span></div>";
    }
    out += "</div>";
  }
  std::vector<html::Chart> charts = html::SectionCharts(s);
  if (!charts.empty()) {
    out += "<div class=\"charts\">";
    for (const html::Chart& c : charts) {
      out += "<figure><figcaption>";
      AppendEscaped(out, c.title);
      out += "</figcaption>";
      out += c.svg;
      out += "</figure>";
      flush();
    }
    out += "</div>";
  }
  for (const Table& t : s.tables) {
    RenderTable(out, t);
    flush();
  }
  out += "</section>";
}

void RenderRunDetails(std::string& out, const Report& r) {
  out +=
      "<section class=\"report-section\" id=\"s-run\" data-section=\"run\">"
      "<h2>Run details</h2>";
  Section d;
  Table& meta = d.AddTable("meta", "Metadata", {{"key", "Key"}, {"value", "Value"}});
  // The rows shown only: a run of 100,000 files has a meta line a file.
  for (size_t i = 0; i < r.meta.size() && i < kHtmlRowLimit; ++i)
    meta.rows.push_back({r.meta[i].key, FormatHuman(r.meta[i].value, Unit::kText)});
  RenderTable(out, meta, r.meta.size(), false);
  if (!r.config.empty()) {
    Table& cfg = d.AddTable("config", "Configuration", {{"key", "Key"}, {"value", "Value"}},
                            TableKind::kDetail);
    for (const auto& [k, v] : r.config) cfg.rows.push_back({k, FormatHuman(v, Unit::kText)});
    RenderTable(out, cfg, cfg.rows.size(), false);
  }
  out += "</section>";
}

// Where the timeline is: a profile run writes trace.json beside this page; analyze read a trace.
void RenderTraceLink(std::string& page, const Report& r) {
  // Text, not a link: the page references nothing outside its folder (the browser test).
  const char* how =
      " To see it, open ui.perfetto.dev in a browser and choose \"Open trace file\" (or drop the "
      "file on the page); chrome://tracing reads it too.";
  if (r.kind == "profile") {
    page += " The timeline is <a href=\"trace.json\">trace.json</a>.";
    page += how;
    return;
  }
  const std::string input = MetaText(r, "input");
  if (r.kind != "analyze" || input.empty() || input == "-") return;
  page += " The timeline is the trace analysed, ";
  AppendEscaped(page, input);
  page += ".";
  page += how;
}

}  // namespace

void HtmlRenderer::Render(const Report& r, std::ostream& out) const {
  std::string page;
  page.reserve(1 << 16);
  fmt::format_to(std::back_inserter(page),
                 "<!doctype html>\n<html lang=\"en\" data-kind=\"{}\" data-schema-version=\"{}\">"
                 "<head><meta charset=\"utf-8\"><meta name=\"viewport\" "
                 "content=\"width=device-width,initial-scale=1\"><title>",
                 Escaped(r.kind), r.schema_version);
  AppendShortPaths(page, r.title, false);
  page += "</title><style>";
  page += kStyle;
  page += "</style><script>";
  page += kErrorScript;
  page += "</script></head><body><header><h1>";
  AppendShortPaths(page, r.title, true);
  page += "</h1><p class=\"sub\">";
  std::string sub = r.kind;
  for (const char* key : {"created_utc", "host.name", "input", "run_dir"}) {
    std::string v = MetaText(r, key);
    if (!v.empty() && v != "-") sub += " \xc2\xb7 " + v;
  }
  AppendShortPaths(page, sub, true);
  page += "</p></header><nav><a href=\"#findings\">Findings</a>";
  for (const Section& s : r.sections) {
    if (OnlyFindings(s)) continue;
    fmt::format_to(std::back_inserter(page), "<a href=\"#s-{}\">", Escaped(s.id));
    AppendEscaped(page, s.title);
    page += "</a>";
  }
  page += "<a href=\"#s-run\">Run details</a></nav><main>";
  RenderFindings(page, r);
  // Written out section by section: the page of 1,000 ranks is 130 MB, never held whole.
  for (const Section& s : r.sections) {
    if (OnlyFindings(s)) continue;
    RenderSection(page, s, out);
  }
  RenderRunDetails(page, r);
  page += "</main><footer>Written by trainprof ";
  AppendEscaped(page, MetaText(r, "trainprof_version"));
  page += ". Every figure is in report.json and the CSV files next to this page.";
  RenderTraceLink(page, r);
  page += "</footer><script>";
  page += kSortScript;
  page += "</script></body></html>\n";
  out << page;
}

const char* ReportStyle() { return kStyle; }

std::string RenderHtmlString(const Report& r) {
  std::ostringstream s;
  HtmlRenderer().Render(r, s);
  return s.str();
}

}  // namespace trainprof::report

#include "util/html_outline.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

namespace trainprof::testutil {
namespace {

struct Tag {
  std::string name;
  std::map<std::string, std::string> attrs;
};

// Reads the start tag beginning at html[pos] == '<' (attributes in double quotes, as both
// trainprof and Chromium's serializer write them); *end is set past its '>'.
Tag ReadTag(std::string_view html, size_t pos, size_t* end) {
  Tag t;
  size_t i = pos + 1;
  while (i < html.size() && html[i] != ' ' && html[i] != '>' && html[i] != '/') t.name += html[i++];
  while (i < html.size() && html[i] != '>') {
    while (i < html.size() && (html[i] == ' ' || html[i] == '/')) ++i;
    std::string key;
    while (i < html.size() && html[i] != '=' && html[i] != ' ' && html[i] != '>') key += html[i++];
    std::string value;
    if (i < html.size() && html[i] == '=' && i + 1 < html.size() && html[i + 1] == '"') {
      size_t close = html.find('"', i + 2);
      if (close == std::string_view::npos) break;
      value = std::string(html.substr(i + 2, close - i - 2));
      i = close + 1;
    }
    if (!key.empty()) t.attrs[key] = value;
  }
  *end = i + 1;
  return t;
}

bool HasClass(const Tag& t, std::string_view cls) {
  auto it = t.attrs.find("class");
  if (it == t.attrs.end()) return false;
  std::string_view v = it->second;
  for (size_t p = v.find(cls); p != std::string_view::npos; p = v.find(cls, p + 1)) {
    bool start = p == 0 || v[p - 1] == ' ';
    bool stop = p + cls.size() == v.size() || v[p + cls.size()] == ' ';
    if (start && stop) return true;
  }
  return false;
}

bool External(const std::string& v) {
  return v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//");
}

}  // namespace

std::string HtmlOutline(const std::string& html) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["kind"] = "";
  out["ready"] = "";
  out["errors"] = "";
  nlohmann::ordered_json findings = {{"error", 0}, {"warning", 0}, {"info", 0}};
  nlohmann::ordered_json sections = nlohmann::ordered_json::array();
  int external = 0;
  bool in_findings = false;
  nlohmann::ordered_json* table = nullptr;
  for (size_t pos = html.find('<'); pos != std::string::npos; pos = html.find('<', pos)) {
    if (html.compare(pos, 4, "<!--") == 0 || html.compare(pos, 2, "</") == 0 ||
        html.compare(pos, 2, "<!") == 0) {
      ++pos;
      continue;
    }
    size_t end = pos;
    Tag t = ReadTag(html, pos, &end);
    pos = end;
    for (const char* a : {"src", "href"}) {
      auto it = t.attrs.find(a);
      if (it != t.attrs.end() && External(it->second)) ++external;
    }
    if (t.name == "html") {
      out["kind"] = t.attrs["data-kind"];
      out["ready"] = t.attrs["data-ready"];
      out["errors"] = t.attrs["data-errors"];
    } else if (t.name == "section") {
      in_findings = t.attrs["data-section"] == "findings";
      if (!in_findings) {
        sections.push_back({{"id", t.attrs["data-section"]},
                            {"metrics", 0},
                            {"charts", nlohmann::ordered_json::array()},
                            {"tables", nlohmann::ordered_json::array()}});
      }
      table = nullptr;
    } else if (t.name == "li" && in_findings) {
      for (const char* sev : {"error", "warning", "info"})
        if (HasClass(t, sev)) findings[sev] = findings[sev].get<int>() + 1;
    } else if (sections.empty()) {
      continue;
    } else if (t.name == "div" && HasClass(t, "metric")) {
      auto& s = sections.back();
      s["metrics"] = s["metrics"].get<int>() + 1;
    } else if (t.name == "svg" && HasClass(t, "chart")) {
      sections.back()["charts"].push_back({{"id", t.attrs["data-chart"]},
                                           {"kind", t.attrs["data-kind"]},
                                           {"series", std::stoi("0" + t.attrs["data-series"])}});
    } else if (t.name == "table" && HasClass(t, "data")) {
      auto& tables = sections.back()["tables"];
      tables.push_back({{"id", t.attrs["data-table"]},
                        {"rows", std::stoi("0" + t.attrs["data-rows"])},
                        {"highlighted", 0}});
      table = &tables.back();
    } else if (t.name == "tr" && table != nullptr && HasClass(t, "highlight")) {
      (*table)["highlighted"] = (*table)["highlighted"].get<int>() + 1;
    }
  }
  out["findings"] = std::move(findings);
  out["external_references"] = external;
  out["sections"] = std::move(sections);
  return out.dump(1);
}

}  // namespace trainprof::testutil

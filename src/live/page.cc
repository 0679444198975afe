#include "live/page.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "live/http_server.h"
#include "report/html.h"

namespace trainprof::live {

namespace {

// The page's own rules on top of report.html's stylesheet.
constexpr const char* kLiveStyle = R"css(
.bar{display:flex;height:22px;border-radius:4px;overflow:hidden;background:var(--bg2);margin:6px 0}
.bar span{display:block;height:100%}
.legend span{margin-right:14px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
svg.spark{width:100%;height:60px;background:var(--bg2);border-radius:6px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid var(--line);
 text-align:right}td:first-child,th:first-child{text-align:left}
)css";

// Polls live.json once a second and redraws; figures not measured show "n/a". Text goes in
// with textContent only.
constexpr const char* kLiveScript = R"js(
const PARTS=[["data_wait","data wait","#e8710a"],["forward","forward","#1a73e8"],
 ["backward","backward","#12b5cb"],["optimizer","optimizer","#9334e6"],
 ["communication","communication","#d01884"],["other","other","#bdc1c6"]];
const $=id=>document.getElementById(id);
const num=(v,d,u)=>typeof v==="number"?v.toFixed(d)+(u||""):"n/a";
const ms=v=>typeof v==="number"?(v*1e3).toFixed(1)+" ms":"n/a";
function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined)e.textContent=text;
 if(cls)e.className=cls;return e;}
function card(k,v){const d=el("div",undefined,"metric");d.append(el("span",k,"k"),el("span",v,"v"));return d;}
function row(cells,th){const tr=el("tr");cells.forEach(c=>tr.append(el(th?"th":"td",c)));return tr;}
function spark(v){const s=$("spark");s.replaceChildren();if(!v||v.length<2)return;
 const lo=Math.min(...v),hi=Math.max(...v),w=400,h=60;
 const pts=v.map((x,i)=>(i*w/(v.length-1)).toFixed(1)+","+(h-4-(hi>lo?(x-lo)/(hi-lo):0.5)*(h-8)).toFixed(1));
 const p=document.createElementNS("http://www.w3.org/2000/svg","polyline");
 p.setAttribute("points",pts.join(" "));p.setAttribute("fill","none");p.setAttribute("stroke","#1a73e8");
 p.setAttribute("stroke-width","2");s.append(p);
 $("sparkcap").textContent="step time of the last "+v.length+" steps: "+ms(lo)+" to "+ms(hi);}
function render(s){
 document.body.dataset.step=s.step===undefined?"":String(s.step);
 $("sub").textContent=s.waiting?"waiting for the first snapshot":("step "+s.step+
  (s.epoch!==undefined?", epoch "+s.epoch:"")+" | "+num(s.elapsed_s,0," s")+(s.finished?" | finished":""));
 $("cards").replaceChildren(card("Step time (last)",ms(s.step_last_s)),card("Median",ms(s.step_median_s)),
  card("p95",ms(s.step_p95_s)),card("Steps/s",num(s.steps_per_s,1)),card("Samples/s",num(s.samples_per_s,1)),
  card("CPU",num(s.cpu_pct,0," %")),card("RSS",typeof s.rss_bytes==="number"?(s.rss_bytes/1048576).toFixed(0)+" MiB":"n/a"),
  card("RSS growth",typeof s.rss_growth_bytes_per_min==="number"?(s.rss_growth_bytes_per_min/1048576).toFixed(0)+" MiB/min":"n/a"));
 spark(s.recent_step_s);
 const bar=$("split"),leg=$("legend");bar.replaceChildren();leg.replaceChildren();
 if(s.split){PARTS.forEach(([k,name,c])=>{const b=el("span");b.style.width=(100*s.split[k])+"%";
  b.style.background=c;b.title=name;bar.append(b);const l=el("span");const i=el("i");i.style.background=c;
  l.append(i,name+" "+num(100*s.split[k],0," %"));leg.append(l);});}
 else leg.append(el("span","n/a: no data, forward, backward or optimizer scopes recorded in the last second"));
 const dev=$("devices");dev.replaceChildren(row(["GPU","utilization","memory","power"],true));
 (s.devices||[]).forEach(d=>dev.append(row(["GPU "+d.index,num(d.util_pct,0," %"),
  typeof d.memory_bytes==="number"?(d.memory_bytes/1073741824).toFixed(1)+" GiB":"n/a",num(d.power_w,0," W")])));
 if(!(s.devices||[]).length)dev.append(row(["n/a (no GPU sampled)","","",""]));
 const w=s.world,wt=$("world");wt.replaceChildren();$("worldsub").textContent=w?(w.reporting+" of "+
  w.world_size+" ranks | "+num(w.samples_per_s,1)+" samples/s | skew "+num(w.step_skew,2,"x")):"one process";
 if(w){wt.append(row(["rank","median step","in collectives","role"],true));
  w.slowest.forEach(r=>wt.append(row(["rank "+r.rank,ms(r.step_median_s),num(100*r.communication,0," %"),r.role||"n/a"])));
  w.missing.forEach(m=>wt.append(row([m,"","",""])));}
 const v=$("verdict");v.replaceChildren();const li=el("li",undefined,s.verdict?"warning":"");
 li.append(el("span",s.verdict?s.verdict:"n/a","sev"),el("span",s.finding||"not enough measured yet"));v.append(li);}
async function tick(){try{const r=await fetch("live.json",{cache:"no-store"});render(await r.json());
 $("status").textContent="updated "+new Date().toLocaleTimeString();}
 catch(e){$("status").textContent="the run is not answering ("+e.message+"): it may have ended";}}
tick();setInterval(tick,1000);
)js";

}  // namespace

std::string LivePageHtml() {
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width,initial-scale=1\"><title>trainprof live</title><style>{}{}"
      "</style></head><body><header><h1>trainprof live</h1><p class=\"sub\" id=\"sub\">"
      "connecting</p><p class=\"sub\" id=\"status\"></p></header><main>"
      "<section class=\"findings\"><h2>Verdict</h2><ul id=\"verdict\"></ul></section>"
      "<section><h2>Steps</h2><div class=\"metrics\" id=\"cards\"></div>"
      "<figure><figcaption id=\"sparkcap\">step time</figcaption><svg class=\"spark\" "
      "id=\"spark\" viewBox=\"0 0 400 60\" preserveAspectRatio=\"none\"></svg></figure></section>"
      "<section><h2>Where the loop's time goes</h2><div class=\"bar\" id=\"split\"></div>"
      "<div class=\"legend\" id=\"legend\"></div></section>"
      "<section><h2>Devices</h2><table id=\"devices\"></table></section>"
      "<section><h2>Ranks</h2><p class=\"sub\" id=\"worldsub\"></p><table id=\"world\"></table>"
      "</section></main><script>{}</script></body></html>\n",
      report::ReportStyle(), kLiveStyle, kLiveScript);
}

void LivePage::Publish(std::string json) {
  std::lock_guard<std::mutex> lock(mu_);
  json_ = std::move(json);
}

std::string LivePage::Latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return json_;
}

StatusOr<std::unique_ptr<LivePage>> LivePage::Start(const std::string& host, int port) {
  auto page = std::unique_ptr<LivePage>(new LivePage());
  std::map<std::string, HttpServer::Handler> routes;
  routes["/"] = [html = LivePageHtml()] {
    return HttpAnswer{200, "text/html; charset=utf-8", html};
  };
  routes["/live.json"] = [p = page.get()] {
    const std::string s = p->Latest();
    return HttpAnswer{200, "application/json", s.empty() ? "{\"waiting\":true}" : s, true};
  };
  TRAINPROF_ASSIGN_OR_RETURN(page->server_, HttpServer::Start(host, port, std::move(routes)));
  page->port_ = page->server_->port();
  return page;
}

LivePage::~LivePage() = default;  // the server stops before the snapshot it reads goes

}  // namespace trainprof::live

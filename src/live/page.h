// The live view as a web page (issue 57, live.port): a local HTTP server (live/http_server.h)
// on its own thread serves the page at "/" and the latest snapshot
// at "/live.json"; the page, in report.html's style, fetches it once a second and redraws the
// figures, the split, the devices, the world and the verdict. The page keeps the latest
// snapshot its owner published, so the Session (each tick), `trainprof run` and
// `trainprof watch RUN_DIR --port` (each read of live.json) serve the same page. A closed
// browser costs nothing; the server never blocks the caller.
//
//   auto page = live::LivePage::Start("127.0.0.1", 8765);
//   if (!page.ok()) say(page.status());   // "cannot serve the live page on 127.0.0.1:8765: ..."
//   (*page)->Publish(LiveJson(snapshot));
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "trainprof/status.h"

namespace trainprof::live {

class HttpServer;

// The page itself: HTML, CSS and the script that polls /live.json.
std::string LivePageHtml();

class LivePage {
 public:
  // Serves on host:port (0: a free port the kernel picks; port() says which). Errors: the port
  // is in use or cannot be bound (Unavailable, naming host and port).
  static StatusOr<std::unique_ptr<LivePage>> Start(const std::string& host, int port);
  ~LivePage();  // stops the server and joins its thread
  int port() const { return port_; }
  // The snapshot (live.json's text) the page shows from now on; any thread.
  void Publish(std::string json);

 private:
  LivePage() = default;
  std::string Latest();
  std::mutex mu_;
  std::string json_;                    // "" until the first Publish
  std::unique_ptr<HttpServer> server_;  // after json_: stopped before json_ goes
  int port_ = 0;
};

}  // namespace trainprof::live

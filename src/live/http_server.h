// The live page's HTTP server: GET (and HEAD) of a few fixed paths, answered from memory on one
// thread of its own, one connection at a time, each closed after its answer. It is ours, not a
// library's, because the library Debian has (cpp-httplib) loads OpenSSL and brotli into every
// process that links it, about 5 ms of every trainprof command's start, for a page served over
// plain HTTP on the loopback (docs/architecture.md).
//
//   auto server = live::HttpServer::Start("127.0.0.1", 0, {
//       {"/", [] { return live::HttpAnswer{200, "text/html; charset=utf-8", Page()}; }}});
//   if (server.ok()) say((*server)->port());   // the port the kernel picked
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "trainprof/status.h"

namespace trainprof::live {

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  bool no_store = false;  // "Cache-Control: no-store"
};

class HttpServer {
 public:
  using Handler = std::function<HttpAnswer()>;  // called on the server's thread

  // Listens on host:port (0: a free port the kernel picks) and serves `routes` (the path, less
  // any query, to its handler) until destroyed; other paths get 404, other methods 405.
  // Errors: the host does not resolve, or the port is in use or cannot be bound (Unavailable,
  // naming host and port).
  static StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& host, int port,
                                                     std::map<std::string, Handler> routes);
  ~HttpServer();  // stops serving, closes the socket, joins the thread
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

 private:
  HttpServer() = default;
  void Loop();
  void Serve(int fd);

  int listen_fd_ = -1, wake_fd_ = -1, port_ = 0;
  std::map<std::string, Handler> routes_;
  std::thread thread_;
};

}  // namespace trainprof::live

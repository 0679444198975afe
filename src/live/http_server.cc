#include "live/http_server.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string_view>

namespace trainprof::live {
namespace {

constexpr size_t kMaxRequestBytes = 16 << 10;  // a browser's GET is well under 2 KB
constexpr int kClientWaitMs = 2000;            // a client that sends nothing is let go

// The bytes of a request up to the end of its head (the blank line), or "" when the client
// closed, sent too much, or stayed silent past kClientWaitMs.
std::string ReadHead(int fd) {
  std::string in;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kClientWaitMs);
  while (in.find("\r\n\r\n") == std::string::npos && in.size() < kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char buf[2048];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    in.append(buf, static_cast<size_t>(n));
  }
  return in.find("\r\n\r\n") == std::string::npos ? "" : in;
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Error";
  }
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away; nothing to tell it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void Answer(int fd, const HttpAnswer& a, bool head_only) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
      a.status, Reason(a.status), a.content_type, a.body.size(),
      a.no_store ? "Cache-Control: no-store\r\n" : "");
  if (!head_only) out += a.body;
  SendAll(fd, out);
}

HttpAnswer Plain(int status) {
  return {status, "text/plain; charset=utf-8", fmt::format("{} {}\n", status, Reason(status))};
}

// A socket listening on host:port, or an error naming both.
StatusOr<int> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int bad =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  const auto fail = [&] {
    return UnavailableError(fmt::format(
        "cannot serve the live page on {}:{}: the port is in use, or the address is not this "
        "machine's",
        host, port));
  };
  if (bad != 0) return fail();
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR alone (a port left in TIME_WAIT by an earlier run binds again); never
    // SO_REUSEPORT, which would let a second server share a port in use instead of saying so.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return fail();
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  return -1;
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& host, int port,
                                                        std::map<std::string, Handler> routes) {
  TRAINPROF_ASSIGN_OR_RETURN(const int fd, Listen(host, port));
  auto server = std::unique_ptr<HttpServer>(new HttpServer());
  server->listen_fd_ = fd;
  server->port_ = BoundPort(fd);
  server->wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (server->port_ <= 0 || server->wake_fd_ < 0)
    return UnavailableError(fmt::format("cannot serve the live page on {}:{}", host, port));
  server->routes_ = std::move(routes);
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  return server;
}

HttpServer::~HttpServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void HttpServer::Loop() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;  // EINTR
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}

void HttpServer::Serve(int fd) {
  const std::string head = ReadHead(fd);
  if (head.empty()) return;
  // "GET /live.json?t=1 HTTP/1.1": the method, then the target up to the next space.
  const std::string_view line = std::string_view(head).substr(0, head.find("\r\n"));
  const size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos)
    return Answer(fd, Plain(400), false);
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find_first_of("?#"));
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) return Answer(fd, Plain(405), false);
  const auto route = routes_.find(std::string(target));
  Answer(fd, route == routes_.end() ? Plain(404) : route->second(), head_only);
}

}  // namespace trainprof::live

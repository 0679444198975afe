#include "live/http_server.h"

#include <gtest/gtest.h>

#include <string>

#include "util/golden.h"

namespace trainprof::live {
namespace {

std::string Get(int port, const std::string& target, const std::string& method = "GET") {
  return testutil::HttpExchange(port, method + " " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

std::unique_ptr<HttpServer> Serve() {
  auto server = HttpServer::Start(
      "127.0.0.1", 0,
      {{"/",
        [] {
          return HttpAnswer{200, "text/html; charset=utf-8", "<p>hi</p>"};
        }},
       {"/live.json", [n = 0]() mutable {
          return HttpAnswer{200, "application/json", "{\"n\":" + std::to_string(++n) + "}", true};
        }}});
  EXPECT_TRUE(server.ok()) << server.status().message();
  return server.ok() ? std::move(*server) : nullptr;
}

TEST(HttpServer, AnswersItsPathsFromTheHandlersAndClosesEachConnection) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->port(), 0);
  EXPECT_EQ(Get(server->port(), "/"),
            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 9\r\n"
            "Connection: close\r\n\r\n<p>hi</p>");
  // The query is not part of the path; each request calls the handler again.
  EXPECT_EQ(Get(server->port(), "/live.json?t=5"),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n{\"n\":1}");
  const std::string again = Get(server->port(), "/live.json");
  EXPECT_NE(again.find("\r\n\r\n{\"n\":2}"), std::string::npos) << again;
}

TEST(HttpServer, SaysWhatItCannotAnswer) {
  auto server = Serve();
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  EXPECT_EQ(Get(port, "/nothing").substr(0, 24), "HTTP/1.1 404 Not Found\r\n");
  EXPECT_EQ(Get(port, "/", "POST").substr(0, 33), "HTTP/1.1 405 Method Not Allowed\r\n");
  EXPECT_EQ(testutil::HttpExchange(port, "nonsense\r\n\r\n").substr(0, 26),
            "HTTP/1.1 400 Bad Request\r\n");
  // HEAD: the head of GET's answer, no body.
  const std::string head = Get(port, "/", "HEAD");
  EXPECT_NE(head.find("Content-Length: 9\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
  // A client that closes without a request does not stop the server.
  EXPECT_EQ(testutil::HttpExchange(port, ""), "");
  EXPECT_EQ(Get(port, "/").substr(0, 17), "HTTP/1.1 200 OK\r\n");
}

TEST(HttpServer, APortInUseIsAnErrorNamingIt) {
  auto first = Serve();
  ASSERT_NE(first, nullptr);
  auto second = HttpServer::Start("127.0.0.1", first->port(), {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(first->port())),
            std::string::npos)
      << second.status().message();
  EXPECT_FALSE(HttpServer::Start("no.such.host.invalid", 0, {}).ok());
}

TEST(HttpServer, StopsWhenDestroyedAndFreesThePort) {
  int port = 0;
  {
    auto server = Serve();
    ASSERT_NE(server, nullptr);
    port = server->port();
  }
  EXPECT_EQ(Get(port, "/"), "");  // nobody listens
  auto again = HttpServer::Start("127.0.0.1", port, {});
  EXPECT_TRUE(again.ok()) << again.status().message();
}

}  // namespace
}  // namespace trainprof::live

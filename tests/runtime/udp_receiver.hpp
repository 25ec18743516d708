// A plain POSIX UDP receiver for the tests, independent of the code under test.
#pragma once

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace mbo::test {

class UdpReceiver {
 public:
  // Binds 127.0.0.1:0 (an ephemeral port), or INADDR_ANY:port for a multicast group.
  UdpReceiver() : UdpReceiver("127.0.0.1", 0) {}
  UdpReceiver(const char* bind_address, unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int big = 4 << 20;  // keep bursts from the publisher while the test is not reading
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, bind_address, &a.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error(std::string("bind: ") + std::strerror(errno));
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~UdpReceiver() { ::close(fd_); }
  UdpReceiver(const UdpReceiver&) = delete;
  UdpReceiver& operator=(const UdpReceiver&) = delete;

  unsigned short port() const { return port_; }

  // Joins an IPv4 group on the interface with index `ifindex` (0: any). False on failure.
  bool join(const char* group, int ifindex) {
    ip_mreqn req{};
    ::inet_pton(AF_INET, group, &req.imr_multiaddr);
    req.imr_ifindex = ifindex;
    return ::setsockopt(fd_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &req, sizeof req) == 0;
  }

  // One datagram, or nothing after `timeout_ms` (a hang guard, not a measurement).
  std::optional<std::string> receive(int timeout_ms = 30000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
  }

 private:
  int fd_ = -1;
  unsigned short port_ = 0;
};

}  // namespace mbo::test

// The listening socket and the descriptor budget of the HTTP transport (http_conn.h).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "serve/http_conn.h"

namespace jitllm::serve {

int listen_socket(const std::string& host, int port, int* bound_port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
        fail("serve: --host {}: cannot resolve the address: {}", host, gai_strerror(rc));
    std::string why;
    int fd = -1;
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        // SO_REUSEADDR only: a restart may bind over TIME_WAIT, but no second live server may
        // share the port (SO_REUSEPORT would split the requests between the two)
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
            why = errno == EADDRINUSE ? "the port is in use by another process (choose another --port)"
                                      : std::strerror(errno);
            ::close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) fail("serve: cannot listen on {}:{}: {}", host, port, why);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return fd;
}

int connection_limit(int wanted) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return wanted;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY) return wanted;
    // 96 descriptors stay for the listener, the event loop, the model file and the kernel cache
    return int(std::min<rlim_t>(rlim_t(wanted), rl.rlim_cur > 128 ? rl.rlim_cur - 96 : 32));
}

}  // namespace jitllm::serve

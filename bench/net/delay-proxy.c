/*
 * A TCP proxy that delays every byte by a fixed time in each direction: the bench's
 * "network" variant (bench/scenarios/uncontended.scenario.ts and
 * http-overhead.scenario.ts), so that a round trip costs what it costs between two
 * hosts (0.25 ms each way by default) while the backends stay on this machine.
 * Written in C because the delay is sub-millisecond: Node's timers have a 1 ms
 * granularity, and a JavaScript proxy that spins to wait would take a core from the
 * contenders it measures. One thread, epoll, one timerfd (CLOCK_MONOTONIC): it
 * sleeps until the next chunk is due, so it costs the contenders next to nothing.
 *
 *   delay-proxy <listen-port> <target-host> <target-port> <delay-us>
 *
 * Prints "listening <port>" once it accepts connections (port 0 picks a free one).
 * Bytes leave in the order they came, each no earlier than <delay-us> after it arrived.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 64
#define CHUNK 65536

typedef struct chunk {
  struct chunk *next;
  uint64_t due_ns;
  size_t len, off;
  char data[];
} chunk_t;

typedef struct side {
  int fd;
  struct side *peer;   /* the socket its bytes go to */
  chunk_t *head, *tail; /* bytes read from this side, waiting to be written to peer */
  int closed;           /* read EOF: close peer's write side once drained */
  struct side *next_pending;
} side_t;

static uint64_t delay_ns;
static int timer_fd, epoll_fd;
static side_t *pending; /* sides with queued chunks (a short list: few connections) */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void arm_timer(void) {
  uint64_t next = 0;
  for (side_t *s = pending; s; s = s->next_pending)
    if (s->head && (!next || s->head->due_ns < next)) next = s->head->due_ns;
  struct itimerspec spec = {0};
  if (next) {
    spec.it_value.tv_sec = (time_t)(next / 1000000000ull);
    spec.it_value.tv_nsec = (long)(next % 1000000000ull);
  }
  timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

static void add_pending(side_t *s) {
  for (side_t *p = pending; p; p = p->next_pending)
    if (p == s) return;
  s->next_pending = pending;
  pending = s;
}

static void remove_pending(side_t *s) {
  for (side_t **p = &pending; *p; p = &(*p)->next_pending) {
    if (*p == s) {
      *p = s->next_pending;
      return;
    }
  }
}

static void close_pair(side_t *s) {
  side_t *peer = s->peer;
  side_t *both[2] = {s, peer};
  for (int i = 0; i < 2; i++) {
    side_t *x = both[i];
    if (!x) continue;
    remove_pending(x);
    for (chunk_t *c = x->head; c;) {
      chunk_t *n = c->next;
      free(c);
      c = n;
    }
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, x->fd, NULL);
    close(x->fd);
    free(x);
  }
}

/* Writes every due chunk of every side; a side whose peer cannot take more keeps the rest. */
static void flush_due(void) {
  uint64_t now = now_ns();
restart:;
  side_t *s = pending;
  while (s) {
    side_t *next = s->next_pending;
    while (s->head && s->head->due_ns <= now) {
      chunk_t *c = s->head;
      ssize_t n = write(s->peer->fd, c->data + c->off, c->len - c->off);
      if (n < 0) {
        if (errno == EAGAIN) break; /* the kernel buffer is full: try at the next turn */
        close_pair(s); /* frees both sides and unlinks them: walk the list again */
        goto restart;
      }
      c->off += (size_t)n;
      if (c->off < c->len) break;
      s->head = c->next;
      if (!s->head) s->tail = NULL;
      free(c);
    }
    if (!s->head) {
      remove_pending(s);
      if (s->closed) shutdown(s->peer->fd, SHUT_WR);
    }
    s = next;
  }
  arm_timer();
}

static void on_readable(side_t *s) {
  char buffer[CHUNK];
  for (;;) {
    ssize_t n = read(s->fd, buffer, sizeof buffer);
    if (n > 0) {
      chunk_t *c = malloc(sizeof(chunk_t) + (size_t)n);
      c->next = NULL;
      c->due_ns = now_ns() + delay_ns;
      c->len = (size_t)n;
      c->off = 0;
      memcpy(c->data, buffer, (size_t)n);
      if (s->tail) s->tail->next = c;
      else s->head = c;
      s->tail = c;
      add_pending(s);
      continue;
    }
    if (n == 0) {
      s->closed = 1;
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
      if (!s->head) shutdown(s->peer->fd, SHUT_WR);
      if (s->peer->closed && !s->head && !s->peer->head) close_pair(s);
      return;
    }
    if (errno == EAGAIN) break;
    close_pair(s);
    return;
  }
  arm_timer();
}

static int nonblocking_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s <listen-port> <target-host> <target-port> <delay-us>\n", argv[0]);
    return 2;
  }
  delay_ns = (uint64_t)strtoull(argv[4], NULL, 10) * 1000ull;
  /* The kernel may otherwise add up to 50 us to every wake-up: a fifth of the delay. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct sockaddr_in target = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &target.sin_addr);

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(listener, 128) < 0) {
    perror("listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(listener, (struct sockaddr *)&addr, &len);
  printf("listening %d\n", ntohs(addr.sin_port));
  fflush(stdout);

  epoll_fd = epoll_create1(0);
  timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &ev);
  ev.data.ptr = &timer_fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, timer_fd, &ev);

  struct epoll_event events[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(epoll_fd, events, MAX_EVENTS, -1);
    for (int i = 0; i < n; i++) {
      void *tag = events[i].data.ptr;
      if (tag == NULL) {
        int client;
        while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          int upstream = socket(AF_INET, SOCK_STREAM, 0);
          /* A blocking connect on loopback: immediate, and simpler than a connect state. */
          if (connect(upstream, (struct sockaddr *)&target, sizeof target) < 0) {
            close(upstream);
            close(client);
            continue;
          }
          fcntl(upstream, F_SETFL, O_NONBLOCK);
          side_t *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
          a->fd = nonblocking_nodelay(client);
          b->fd = nonblocking_nodelay(upstream);
          a->peer = b;
          b->peer = a;
          struct epoll_event ea = {.events = EPOLLIN, .data.ptr = a}, eb = {.events = EPOLLIN, .data.ptr = b};
          epoll_ctl(epoll_fd, EPOLL_CTL_ADD, a->fd, &ea);
          epoll_ctl(epoll_fd, EPOLL_CTL_ADD, b->fd, &eb);
        }
      } else if (tag == &timer_fd) {
        uint64_t expirations;
        ssize_t ignored = read(timer_fd, &expirations, sizeof expirations);
        (void)ignored;
        flush_due();
      } else {
        on_readable((side_t *)tag);
      }
    }
    /* Chunks due now (a delay of 0, or a late turn) go without waiting for the timer. */
    if (pending) flush_due();
  }
}

// shutdown_if_same: the read watch and the server's stop shut sockets they listed a moment before,
// by fd number; a number closed and given to another socket in between must not be shut.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/connection_watch.h"

namespace {

ino_t inode_of(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return st.st_ino;
}

// One byte from `from` reaches `to`: the pair is not shut.
bool carries_a_byte(int from, int to) {
  const char out = 'x';
  char in = 0;
  return ::send(from, &out, 1, MSG_NOSIGNAL) == 1 && ::recv(to, &in, 1, 0) == 1 && in == 'x';
}

TEST(ShutdownIfSame, ShutsOnlyTheSocketItListed) {
  int a[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  const ino_t listed = inode_of(a[0]);
  // Another socket's inode: left alone.
  EXPECT_FALSE(lg::server::shutdown_if_same(a[0], inode_of(a[1]), SHUT_WR));
  EXPECT_TRUE(carries_a_byte(a[0], a[1]));
  // Its own: shut (the peer reads end-of-file).
  EXPECT_TRUE(lg::server::shutdown_if_same(a[0], listed, SHUT_WR));
  char in = 0;
  EXPECT_EQ(::recv(a[1], &in, 1, 0), 0);
  ::close(a[1]);
  // The number closed and given to another socket (dup2 makes it so at once, as a new
  // connection's accept would): that socket is not shut.
  const int number = a[0];
  ::close(a[0]);
  int b[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  ASSERT_EQ(::dup2(b[0], number), number);
  EXPECT_FALSE(lg::server::shutdown_if_same(number, listed, SHUT_RDWR));
  EXPECT_TRUE(carries_a_byte(number, b[1]));
  EXPECT_TRUE(carries_a_byte(b[1], number));
  ::close(number);
  if (b[0] != number) ::close(b[0]);  // socketpair may have taken the free number itself
  ::close(b[1]);
  // A number that is closed: nothing to shut.
  EXPECT_FALSE(lg::server::shutdown_if_same(number, listed, SHUT_RDWR));
}

}  // namespace

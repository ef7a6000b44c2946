// `onnxproof pipeline --attach`: this process's stdout becomes the front end's channel.
#include "attached_command.h"

#include <ext/stdio_filebuf.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

namespace onnxproof::cli {

int with_front_end_channel(const std::function<int(std::istream&, std::ostream&)>& run,
                           const std::function<int(const Error&)>& report_error) {
  // A front end that went away is a failed write, answered as an error, not a SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // The protocol keeps stdout for itself: whatever else writes there (a library's chatter, the
  // summary) goes to stderr with the progress, so that the front end reads only protocol lines.
  std::cout.flush();
  std::fflush(stdout);
  const int channel_fd = ::dup(STDOUT_FILENO);
  if (channel_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return report_error(Error(ErrorCode::io, "cannot set up the front end's channel on stdout"));
  __gnu_cxx::stdio_filebuf<char> channel_buffer(channel_fd, std::ios::out);
  std::ostream to_front_end(&channel_buffer);
  return run(std::cin, to_front_end);
}

}  // namespace onnxproof::cli

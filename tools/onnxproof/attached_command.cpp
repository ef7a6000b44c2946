// `onnxproof pipeline --attach`: the pipeline for a front end on this process's stdin and stdout.
#include <ext/stdio_filebuf.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "onnxproof/core/verdict.h"
#include "onnxproof/pipeline/attached_front_end.h"

namespace onnxproof::cli {

int run_attached_pipeline_command(PipelineOptions options, std::ostream& err) {
  // A front end that went away is a failed write, answered as an error, not a SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // The protocol keeps stdout for itself: whatever else writes there (a library's chatter) goes
  // to stderr with the progress, so that the front end reads only protocol lines.
  std::cout.flush();
  std::fflush(stdout);
  const int channel_fd = ::dup(STDOUT_FILENO);
  if (channel_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return report_error(err, Error(ErrorCode::io, "cannot set up the front end's channel on stdout"));
  __gnu_cxx::stdio_filebuf<char> channel_buffer(channel_fd, std::ios::out);
  std::ostream to_front_end(&channel_buffer);
  auto report = run_attached_pipeline(std::move(options), std::cin, to_front_end, err);
  if (!report) return report_error(err, report.error());
  // The front end reads the outcome from the channel; the exit status is the pipeline's.
  if (const auto* step = first_error_step(*report))
    return report_error(err, Error(ErrorCode::runtime, step->name + " step: " + step->reason));
  return exit_code(report->verdict);
}

}  // namespace onnxproof::cli

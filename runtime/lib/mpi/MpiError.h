//===- MpiError.h - MPI error codes as tprt errors --------------*- C++ -*-===//
//
// Shared by the mpi backend and the MPI bootstrap: an MPI return code
// becomes TPRT_ERROR_BACKEND "<call> failed: <MPI_Error_string>".
//
//===----------------------------------------------------------------------===//

#ifndef TPRT_MPI_MPIERROR_H
#define TPRT_MPI_MPIERROR_H

#include "common/Error.h"

#include <mpi.h>

namespace tprt {

/// Fails with TPRT_ERROR_BACKEND "<call> failed: <MPI's text for code>".
inline tprt_status mpiError(int code, const char *call) {
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, message, &length) != MPI_SUCCESS)
    length = 0;
  message[length] = '\0';
  return fail(TPRT_ERROR_BACKEND, "%s failed: %s", call,
              length ? message : "unknown mpi error");
}

} // namespace tprt

#endif // TPRT_MPI_MPIERROR_H

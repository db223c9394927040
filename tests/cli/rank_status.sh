#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rank_status.sh COMMAND…: runs COMMAND as one MPI rank and records its exit
# status in status.RANK in the current folder (Open MPI or MPICH), so a test
# can check every rank's status; exits with that status.
"$@"
status=$?
echo "$status" >"status.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}"
exit "$status"

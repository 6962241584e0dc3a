// SPDX-License-Identifier: Apache-2.0
// The host's register of retention studies. A study's record lives in the
// state directory of the config that started it; a second config with
// another state directory would not see that record and would write over
// the study's region. So every study that holds storage also has an entry
// in one directory shared by every drivewatch on the host, whatever its
// state directory (default /var/lib/drivewatch/studies.d, the key
// [state] study_register): <study id>.json, naming the study, its state
// directory and the storage extents its region reaches (aging/safety/storage.h).
// The write gate (aging/safety/interlocks.h) reads every entry before every write
// pass.
//
// Why a register rather than looking for study blocks on the device: it
// covers files and block devices alike, costs no reads of the target, and
// says exactly which bytes are held; reading a write range for study
// headers would have to read every block of it to be as exact.
//
// An entry is written (atomically) before the study's first byte, and
// removed when the study ends or fails. An entry whose study record is gone
// (its state directory was removed) holds nothing any more; one whose
// record cannot be read holds what the entry says; a damaged entry holds
// everything, since what it covers cannot be known. Entries are checksummed
// like study records (aging/retention/retention_study.h).
#pragma once

#include <string>
#include <vector>

#include "aging/safety/storage.h"
#include "config/util/expected.h"
#include "config/util/json.h"

namespace drivewatch::aging {

struct RegisteredStudy {
  std::string file;             // the entry's path, for messages
  std::string study;            // its name
  std::string id;               // 16 hex digits, as the study record's
  std::string state_directory;  // where its record is
  std::vector<StorageExtent> storage;
};

// Writes the entry of `study` (a record with study, id and storage) of
// `state_directory`, creating the register directory when missing. An
// error names the register and the key that moves it.
Status RegisterStudy(const std::string& register_directory, const std::string& state_directory,
                     const Json& study);
// Removes the entry of study `id`; a missing entry is not an error.
Status UnregisterStudy(const std::string& register_directory, const std::string& id);

// Every entry. A missing register is empty; entries that cannot be read or
// fail their checks are left out and described in `problems` ("PATH:
// damaged study register entry: ..."). An unreadable register directory is
// one problem.
std::vector<RegisteredStudy> ReadStudyRegister(const std::string& register_directory,
                                               std::vector<std::string>* problems);

// Enters every study of `state_directory` that holds storage and has a
// storage list but no entry yet (records written before the register
// existed get one the first time drivewatch starts). Errors, and each
// study record that does not load (so is not entered), are returned in
// `problems`.
void RegisterHeldStudies(const std::string& register_directory,
                         const std::string& state_directory, std::vector<std::string>* problems);

// Whether a study in this state holds its region against other writers.
bool StudyHoldsRegion(const std::string& state);

}  // namespace drivewatch::aging

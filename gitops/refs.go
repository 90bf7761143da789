package gitops

import (
	"context"
	"fmt"
	"strings"
)

// Ref updates always name the value they expect to replace, so that two
// writers can never silently overwrite each other: git checks the old
// value under the ref's lock.

// UpdateRefCreate creates ref pointing at commit, failing with ErrRefExists
// if the ref already exists (`git update-ref REF COMMIT ""`). dir is any
// directory of the repository.
func UpdateRefCreate(ctx context.Context, dir, ref, commit string) error {
	return UpdateRef(ctx, dir, ref, commit, "")
}

// UpdateRef moves ref from oldID to newID (`git update-ref REF NEW OLD`).
// An empty oldID means the ref must not exist yet (ErrRefExists if it
// does); a ref at another value than oldID, or missing, gives
// ErrRefChanged. Both ids must be full object ids and ref a full ref name
// (refs/...): nothing is resolved relative to a worktree's HEAD.
func UpdateRef(ctx context.Context, dir, ref, newID, oldID string) error {
	if err := checkRefArgs(ref, newID, oldID, true); err != nil {
		return err
	}
	_, err := Run(ctx, dir, Cmd{}, "update-ref", "--no-deref", ref, newID, oldID)
	return classifyRefUpdate(err)
}

// DeleteRef deletes ref if it is at oldID (`git update-ref -d REF OLD`); a
// ref at another value, or missing, gives ErrRefChanged. oldID is
// required: a ref is never deleted without checking what it pointed at.
func DeleteRef(ctx context.Context, dir, ref, oldID string) error {
	if err := checkRefArgs(ref, oldID, oldID, false); err != nil {
		return err
	}
	_, err := Run(ctx, dir, Cmd{}, "update-ref", "--no-deref", "-d", ref, oldID)
	return classifyRefUpdate(err)
}

func checkRefArgs(ref, newID, oldID string, oldMayBeEmpty bool) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("gitops: ref %q is not a full ref name (refs/...)", ref)
	}
	if !IsObjectID(newID) {
		return fmt.Errorf("gitops: %q is not a full object id", newID)
	}
	if !(oldMayBeEmpty && oldID == "") && !IsObjectID(oldID) {
		return fmt.Errorf("gitops: expected old value %q is not a full object id", oldID)
	}
	return nil
}

func classifyRefUpdate(err error) error {
	err = classify(err, ErrRefExists, "reference already exists")
	return classify(err, ErrRefChanged, "but expected", "unable to resolve reference", "reference is missing but expected")
}

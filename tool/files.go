package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// FileInfo describes a durable file.
type FileInfo struct {
	Name        string    `json:"name"`
	Size        int64     `json:"size"`
	ContentType string    `json:"contentType"`
	SHA256      string    `json:"sha256"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// FilePutOptions modify a Put. Nil means defaults.
type FilePutOptions struct {
	// ContentType is recorded with the file; default application/octet-stream.
	ContentType string
}

// FileListOptions page a listing. Nil means defaults.
type FileListOptions struct {
	Limit  int
	Cursor string
}

// ErrFileNotFound: no file has that name.
var ErrFileNotFound = errors.New("file not found")

// ErrFileTooLarge: a Put went past the size limit; nothing was stored.
var ErrFileTooLarge = errors.New("file too large")

// Files is durable blob storage, namespaced per agent. Contents stream in
// and out: nothing is held in memory whole.
type Files interface {
	// Put stores r's content under name, replacing any file there, once r
	// is read to its end.
	Put(ctx context.Context, name string, r io.Reader, opts *FilePutOptions) (FileInfo, error)
	// Get opens a file; the caller closes it.
	Get(ctx context.Context, name string) (io.ReadCloser, FileInfo, error)
	// Stat describes a file.
	Stat(ctx context.Context, name string) (FileInfo, error)
	// List describes the files whose names start with prefix, in name order.
	List(ctx context.Context, prefix string, opts *FileListOptions) ([]FileInfo, string, error)
	// Delete removes a file; an absent file is no error.
	Delete(ctx context.Context, name string) error
}

// MaxFileNameBytes bounds file names.
const MaxFileNameBytes = 1024

// CheckFileName reports whether name can name a file: slash-separated
// segments of UTF-8, none empty, "." or "..", and no NUL, backslash or
// leading slash: no name can leave its namespace.
func CheckFileName(name string) error {
	switch {
	case name == "":
		return errors.New("files: the name is empty")
	case len(name) > MaxFileNameBytes:
		return fmt.Errorf("files: the name is %d bytes long; the limit is %d", len(name), MaxFileNameBytes)
	case !utf8.ValidString(name):
		return errors.New("files: the name is not valid UTF-8")
	case strings.ContainsAny(name, "\x00\\"):
		return fmt.Errorf("files: %q: NUL and backslash are not allowed in names", name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("files: %q: names are relative, with no leading slash", name)
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "":
			return fmt.Errorf("files: %q has an empty segment", name)
		case ".", "..":
			return fmt.Errorf("files: %q: the segments . and .. are not allowed", name)
		}
		if strings.HasPrefix(seg, ".tmp-") {
			return fmt.Errorf("files: %q: segments starting with .tmp- are reserved", name)
		}
	}
	return nil
}

type unconfiguredFiles struct{}

var errFilesNotConfigured = fmt.Errorf("files: %w: the host has no store; serve the agent with agent-sdk serve, or give host.Options.Store", ErrNotConfigured)

func (unconfiguredFiles) Put(context.Context, string, io.Reader, *FilePutOptions) (FileInfo, error) {
	return FileInfo{}, errFilesNotConfigured
}

func (unconfiguredFiles) Get(context.Context, string) (io.ReadCloser, FileInfo, error) {
	return nil, FileInfo{}, errFilesNotConfigured
}

func (unconfiguredFiles) Stat(context.Context, string) (FileInfo, error) {
	return FileInfo{}, errFilesNotConfigured
}

func (unconfiguredFiles) List(context.Context, string, *FileListOptions) ([]FileInfo, string, error) {
	return nil, "", errFilesNotConfigured
}

func (unconfiguredFiles) Delete(context.Context, string) error { return errFilesNotConfigured }

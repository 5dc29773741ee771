package redteam

import (
	"context"
	"errors"

	sdk "github.com/coder/acp-go-sdk"
)

// offersNothing is the part of an ACP client the attacks do not use: file
// and terminal methods answer that the client does not offer them.
type offersNothing struct{}

var errNotOffered = errors.New("not offered by this client")

func (offersNothing) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNotOffered
}
func (offersNothing) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNotOffered
}
func (offersNothing) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNotOffered
}
func (offersNothing) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNotOffered
}
func (offersNothing) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNotOffered
}
func (offersNothing) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNotOffered
}
func (offersNothing) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNotOffered
}

/**
 * Thin wrappers over the VS Code API. Logic modules call these instead of `vscode`
 * directly, so unit tests can run them against a stub `vscode` module.
 */
import * as vscode from 'vscode';

export function getConfiguration(section: string, scope?: vscode.ConfigurationScope): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(section, scope);
}

export function onDidChangeConfiguration(
  handler: (e: vscode.ConfigurationChangeEvent) => unknown,
): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration(handler);
}

export function getWorkspaceFolders(): readonly vscode.WorkspaceFolder[] {
  return vscode.workspace.workspaceFolders ?? [];
}

export function createOutputChannel(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function createStatusBarItem(priority: number): vscode.StatusBarItem {
  return vscode.window.createStatusBarItem('pycsamt.index', vscode.StatusBarAlignment.Left, priority);
}

export function registerCommand(command: string, callback: (...args: any[]) => any): vscode.Disposable {
  return vscode.commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...rest: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(command, ...rest);
}

export function showErrorMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showErrorMessage(message, ...items);
}

export function showWarningMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showWarningMessage(message, ...items);
}

export function showInformationMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
  return vscode.window.showInformationMessage(message, ...items);
}

export function showInputBox(options: vscode.InputBoxOptions): Thenable<string | undefined> {
  return vscode.window.showInputBox(options);
}

export function showQuickPick<T extends vscode.QuickPickItem>(
  items: readonly T[],
  options: vscode.QuickPickOptions,
): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, options);
}

export function createQuickPick<T extends vscode.QuickPickItem>(): vscode.QuickPick<T> {
  return vscode.window.createQuickPick<T>();
}

export function withProgress<R>(
  title: string,
  notification: boolean,
  task: () => Thenable<R>,
): Thenable<R> {
  const location = notification ? vscode.ProgressLocation.Notification : vscode.ProgressLocation.Window;
  return vscode.window.withProgress({ location, title }, task);
}

export function getActiveTextEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor;
}

export function createWebviewPanel(viewType: string, title: string): vscode.WebviewPanel {
  return vscode.window.createWebviewPanel(
    viewType,
    title,
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
    { enableScripts: true, enableCommandUris: false, retainContextWhenHidden: true, localResourceRoots: [] },
  );
}

/** Open a file (or any URI) with the cursor on a 1-based line. */
export async function openLocation(uri: vscode.Uri, line1?: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(uri);
  const line = Math.max(0, Math.min((line1 ?? 1) - 1, doc.lineCount - 1));
  const pos = new vscode.Position(line, 0);
  await vscode.window.showTextDocument(doc, {
    selection: new vscode.Range(pos, pos),
    preview: true,
  });
  const editor = vscode.window.activeTextEditor;
  editor?.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.AtTop);
}

export function uriFile(fsPath: string): vscode.Uri {
  return vscode.Uri.file(fsPath);
}

export function uriParse(value: string): vscode.Uri {
  return vscode.Uri.parse(value);
}

export function getExtension<T = any>(id: string): vscode.Extension<T> | undefined {
  return vscode.extensions.getExtension<T>(id);
}

export function themeColor(id: string): vscode.ThemeColor {
  return new vscode.ThemeColor(id);
}

export function themeIcon(id: string): vscode.ThemeIcon {
  return new vscode.ThemeIcon(id);
}

/** Text of the open documents of one language. */
export function openDocumentTexts(languageId: string): string[] {
  return vscode.workspace.textDocuments.filter((d) => d.languageId === languageId).map((d) => d.getText());
}

/** A notification with a progress message the task updates. */
export function withProgressMessages<R>(title: string, task: (report: (message: string) => void) => Thenable<R>): Thenable<R> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, (progress) =>
    task((message) => progress.report({ message })),
  );
}
